package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A service account whose Role lacks a verb: the API server answers {@code 403 Forbidden}. The
 * application must learn which verb on which resource in which namespace was refused and where the
 * Role is — not only that "something" was refused — and the lease must hold nothing afterwards.
 * One mock API server for the class; each test refuses in its own namespace.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class KubernetesRbacTest {

  private static final String LEASES = "/apis/coordination.k8s.io/v1/namespaces/";

  private final MockApiServer server = new MockApiServer();

  @AfterAll
  void stop() {
    server.close();
  }

  @Test
  void aRefusedCreateNamesTheVerbTheResourceAndTheRoleAndHoldsNothing() {
    server.refuse("POST", LEASES + "no-create/leases", 403, forbidden("create", "no-create"));
    try (KubernetesBackend backend = backend("no-create")) {
      io.leasehold.Lease lease = backend.newLease(settings("orders", "pod-a"));

      assertThatThrownBy(() -> lease.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("Kubernetes refused to create leases.coordination.k8s.io \"orders\""
              + " in namespace no-create: 403 Forbidden")
          .hasMessageContaining("cannot create resource \"leases\"") // what the server said
          .hasMessageContaining("get, create and update")
          .hasMessageContaining("deploy/kubernetes/app-rbac/leasehold-leases.yaml");

      assertThat(lease.checkAlive()).isFalse();
      assertThat(lease.fencingToken()).isEmpty();
      assertThat(read("no-create", "orders")).as("nothing was written").isNull();
      assertThatThrownBy(() -> lease.acquire().join())
          .as("a second try is refused the same way")
          .hasMessageContaining("refused to create");
      assertThat(lease.checkAlive()).isFalse();
    }
  }

  @Test
  void aRefusedUpdateNamesItsVerbAndLeavesTheRecordReleased() {
    server.refuse("PUT", LEASES + "no-update/leases/jobs", 403, forbidden("update", "no-update"));
    try (KubernetesBackend backend = backend("no-update")) {
      io.leasehold.Lease lease = backend.newLease(settings("jobs", "pod-a"));

      assertThatThrownBy(() -> lease.acquire().join())
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("Kubernetes refused to update leases.coordination.k8s.io \"jobs\""
              + " in namespace no-update: 403 Forbidden")
          .hasMessageContaining("deploy/kubernetes/app-rbac/leasehold-leases.yaml");

      assertThat(lease.checkAlive()).isFalse();
      assertThat(lease.fencingToken()).isEmpty();
      Lease record = read("no-update", "jobs");
      assertThat(record).as("the create went through; the take did not").isNotNull();
      assertThat(record.getSpec().getHolderIdentity()).as("nobody holds it").isEmpty();
    }
  }

  @Test
  void aRefusedGetNamesTheKubernetesVerbAndAnUnauthorizedClientIsToldItsCredentialsFailed() {
    server.refuse("GET", LEASES + "no-get/leases/report", 403, forbidden("get", "no-get"));
    server.refuse("GET", LEASES + "no-auth/leases/report", 401, "Unauthorized");
    try (KubernetesBackend noGet = backend("no-get"); KubernetesBackend noAuth = backend("no-auth")) {
      assertThatThrownBy(() -> noGet.read("report").join())
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("Kubernetes refused to get leases.coordination.k8s.io \"report\""
              + " in namespace no-get: 403 Forbidden");

      io.leasehold.Lease lease = noAuth.newLease(settings("report", "pod-a"));
      assertThatThrownBy(() -> lease.acquire().join())
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("Kubernetes did not accept the client's credentials (401 Unauthorized)")
          .hasMessageNotContaining("Role"); // not an RBAC problem: the token or certificate is
      assertThat(lease.checkAlive()).isFalse();
    }
  }

  /** The message a real API server gives a service account without the verb. */
  private static String forbidden(String verb, String namespace) {
    return "leases.coordination.k8s.io is forbidden: User \"system:serviceaccount:" + namespace
        + ":my-app\" cannot " + verb + " resource \"leases\" in API group \"coordination.k8s.io\""
        + " in the namespace \"" + namespace + "\"";
  }

  private KubernetesBackend backend(String namespace) {
    return KubernetesBackend.using(MockApiServer.client(server.address()), namespace);
  }

  private Lease read(String namespace, String name) {
    KubernetesClient admin = server.admin();
    return admin.resources(Lease.class).inNamespace(namespace).withName(name).get();
  }

  /** Generous timeouts: a refusal must be reported as one, not as a timeout on a loaded machine. */
  private static LeaseSettings settings(String name, String owner) {
    return SuiteSettings.forTtl(name, owner, Duration.ofSeconds(3))
        .operationTimeout(Duration.ofSeconds(2))
        .build();
  }
}
