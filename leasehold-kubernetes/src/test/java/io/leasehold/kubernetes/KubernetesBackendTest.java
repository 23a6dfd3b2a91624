package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the Kubernetes backend writes, and the rules beyond the contract suite. */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class KubernetesBackendTest {

  private static final Duration TTL = Duration.ofMillis(1500);
  private static final String MICRO_TIME = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z";

  private final MockApiServer server = new MockApiServer();
  private final KubernetesClient admin = server.admin();
  private final KubernetesBackend backend = backend();

  @AfterEach
  void stop() {
    backend.close();
    server.close();
  }

  private KubernetesBackend backend() {
    KubernetesClient client = MockApiServer.client(server.address());
    client.resources(Lease.class).inNamespace(MockApiServer.NAMESPACE).withName("warm-up").get();
    return KubernetesBackend.using(client, MockApiServer.NAMESPACE);
  }

  /** The suite's settings for a 1.5 s TTL; two retries ride out a slow first request. */
  private static LeaseSettings settings(String name, String owner) {
    return SuiteSettings.forTtl(name, owner, TTL).acquireRetries(2).build();
  }

  @Test
  void theRecordIsWrittenAsClientGoWritesIt() throws Exception {
    io.leasehold.Lease a = backend.newLease(settings("orders", "pod-a"));
    assertThat(a.acquire().get()).isTrue();
    Lease first = read("orders");

    assertThat(first.getSpec().getHolderIdentity()).isEqualTo(a.holder().toString());
    assertThat(first.getSpec().getLeaseDurationSeconds())
        .as("a 1.5 s TTL, rounded up to whole seconds")
        .isEqualTo(2);
    assertThat(first.getSpec().getLeaseTransitions())
        .as("the first tenure takes the released record the create made")
        .isEqualTo(1);
    assertThat(a.fencingToken()).hasValue(token(first));
    assertThat(first.getMetadata().getFinalizers()).containsExactly(KubernetesLeaseStore.FINALIZER);
    assertThat(first.getSpec().getAcquireTime()).isEqualTo(first.getSpec().getRenewTime());
    assertThat(first.getMetadata().getAnnotations())
        .containsEntry(KubernetesLeaseStore.LEASE_NAME_ANNOTATION, "orders");
    String json = rawJson("orders");
    assertThat(json)
        .as("acquireTime and renewTime as MicroTime, as client-go writes them")
        .containsPattern("\"acquireTime\":\"" + MICRO_TIME + "\"")
        .containsPattern("\"renewTime\":\"" + MICRO_TIME + "\"");

    await().atMost(Duration.ofSeconds(10))
        .until(() -> !read("orders").getSpec().getRenewTime().equals(first.getSpec().getRenewTime()));
    Lease renewed = read("orders");
    assertThat(renewed.getSpec().getAcquireTime()).isEqualTo(first.getSpec().getAcquireTime());
    assertThat(renewed.getSpec().getRenewTime()).isAfter(first.getSpec().getRenewTime());
    assertThat(renewed.getSpec().getLeaseTransitions()).isEqualTo(1);
    assertThat(token(renewed)).as("renewals keep the token").isEqualTo(token(first));
  }

  @Test
  void releaseClearsTheHolderAndTheNextTenureIncrementsLeaseTransitions() throws Exception {
    io.leasehold.Lease a = backend.newLease(settings("jobs", "pod-a"));
    io.leasehold.Lease b = backend.newLease(settings("jobs", "pod-b"));
    assertThat(a.acquire().get()).isTrue();

    a.release().get();

    Lease released = read("jobs");
    assertThat(released.getSpec().getHolderIdentity()).isEmpty();
    assertThat(released.getSpec().getLeaseDurationSeconds()).isEqualTo(1);
    assertThat(released.getSpec().getLeaseTransitions()).isEqualTo(1);
    assertThat(released.getMetadata().getFinalizers())
        .as("only a held object keeps the finalizer")
        .isNullOrEmpty();
    assertThat(b.acquire().get()).as("a released lease is free at once").isTrue();
    assertThat(b.fencingToken())
        .as("the token is the resourceVersion the tenure's write replaced")
        .hasValue(Long.parseLong(released.getMetadata().getResourceVersion()));
    assertThat(read("jobs").getSpec().getLeaseTransitions()).isEqualTo(2);
  }

  @Test
  void aForeignRecordIsTakenOnlyAfterThisContenderSawItUnchangedForItsDuration() throws Exception {
    // A client-go holder whose renewTime is an hour old: a contender that compared its wall clock
    // with renewTime (fabric8's LeaderElector does) would take it at once.
    ZonedDateTime anHourAgo = ZonedDateTime.now(ZoneOffset.UTC).minusHours(1);
    admin.resource(foreign("batch", "client-go-pod", 7, anHourAgo)).create();
    io.leasehold.Lease a = backend.newLease(settings("batch", "pod-a"));

    long firstLook = System.nanoTime();
    assertThat(a.acquire().get()).as("the first look only starts the clock").isFalse();
    // The foreign holder renews: the clock starts again from this change.
    Lease seen = read("batch");
    Lease lastForeign =
        admin.resource(new LeaseBuilder(seen).editSpec().withRenewTime(anHourAgo.plusSeconds(1)).endSpec().build())
            .update();
    long renewed = System.nanoTime(); // before this contender can have seen the change
    assertThat(a.acquire().get()).isFalse();

    await().atMost(Duration.ofSeconds(20))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> a.acquire().get());
    long tookOver = System.nanoTime();

    assertThat(Duration.ofNanos(tookOver - renewed))
        .as("unchanged for leaseDurationSeconds (3 s) since the foreign holder renewed")
        .isGreaterThanOrEqualTo(Duration.ofSeconds(3));
    assertThat(Duration.ofNanos(tookOver - firstLook)).isGreaterThanOrEqualTo(Duration.ofSeconds(3));
    assertThat(a.fencingToken()).hasValue(Long.parseLong(lastForeign.getMetadata().getResourceVersion()));
    assertThat(read("batch").getSpec().getLeaseTransitions()).isEqualTo(8);
    assertThat(read("batch").getSpec().getHolderIdentity()).isEqualTo(a.holder().toString());
  }

  @Test
  void aRenewalThatFindsAnotherHolderReportsTakenOver() throws Exception {
    io.leasehold.Lease a = backend.newLease(settings("shard-1", "pod-a"));
    LossRecorder losses = new LossRecorder(io.leasehold.Ticker.system());
    a.onLost(losses);
    assertThat(a.acquire().get()).isTrue();

    // Another writer takes the object on its current version (an operator, a misconfigured
    // client-go elector): our next renewal conflicts and must see who holds it now.
    Lease current = read("shard-1");
    admin.resource(
            new LeaseBuilder(current)
                .editSpec()
                .withHolderIdentity("intruder")
                .withLeaseTransitions(current.getSpec().getLeaseTransitions() + 1)
                .endSpec()
                .build())
        .update();

    await().atMost(Duration.ofSeconds(10)).until(() -> losses.count() == 1);
    assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.TAKEN_OVER);
    assertThat(losses.first().reason().detail()).contains("intruder");
    assertThat(a.checkAlive()).isFalse();
    assertThat(read("shard-1").getSpec().getHolderIdentity()).isEqualTo("intruder");
  }

  @Test
  void aRecordWhoseTokenIsNotBelowItsResourceVersionIsRefusedNotGrantedASmallerToken() {
    // What an etcd restore from a backup can leave: a record of a tenure whose token is above the
    // object's resourceVersion. A new tenure would get a token no greater than an earlier one.
    ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
    admin.resource(new LeaseBuilder(foreign("restored", "", 4, now))
            .editMetadata()
            .addToAnnotations(KubernetesLeaseStore.TOKEN_ANNOTATION, "999999999999")
            .endMetadata()
            .build())
        .create();
    io.leasehold.Lease a = backend.newLease(settings("restored", "pod-a"));

    assertThatThrownBy(() -> a.acquire().join())
        .hasCauseInstanceOf(io.leasehold.LeaseException.class)
        .hasMessageContaining("not above the fencing token 999999999999");
    assertThat(a.checkAlive()).isFalse();
    assertThat(read("restored").getSpec().getHolderIdentity()).isEmpty();
  }

  @Test
  void aNameKubernetesWouldRejectIsStoredUnderItsMappedName() throws Exception {
    io.leasehold.Lease a = backend.newLease(settings("Orders/EU", "pod-a"));
    assertThat(a.acquire().get()).isTrue();

    Lease stored = read(KubernetesLeaseNames.objectName("Orders/EU"));
    assertThat(stored.getMetadata().getName()).startsWith("orders-eu-");
    assertThat(stored.getMetadata().getAnnotations())
        .containsEntry(KubernetesLeaseStore.LEASE_NAME_ANNOTATION, "Orders/EU");
  }

  @Test
  void aTtlUnderOneSecondIsRejectedNamingTheField() {
    LeaseSettings tooShort =
        LeaseSettings.builder("fast", "pod-a").ttl(Duration.ofMillis(900)).build();

    assertThatThrownBy(() -> backend.newLease(tooShort))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("ttl must be at least 1 s")
        .hasMessageContaining("leaseDurationSeconds")
        .hasMessageContaining("900 ms");
    assertThat(backend.newLease(settings("fine", "pod-a"))).isNotNull();
  }

  @Test
  void theUriNamesTheNamespaceOrNothing() {
    assertThat(KubernetesBackendProvider.namespaceOf("kubernetes:")).isNull();
    assertThat(KubernetesBackendProvider.namespaceOf("kubernetes:?namespace=team-a")).isEqualTo("team-a");
    for (String bad :
        List.of("kubernetes://host:6443", "kubernetes:?ns=a", "kubernetes:?namespace=a&x=1")) {
      assertThatThrownBy(() -> KubernetesBackendProvider.namespaceOf(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("kubernetes:?namespace=NAMESPACE")
          .hasMessageContaining(bad);
    }
    assertThatThrownBy(() -> KubernetesBackendProvider.namespaceOf("kubernetes:?namespace=Team_A"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("namespace must");
    assertThat(backend.uri()).isEqualTo("kubernetes:?namespace=" + MockApiServer.NAMESPACE);
  }

  @Test
  void theBackendIsFoundByItsScheme() {
    // Opening connects to nothing yet: the API server is only asked on the first lease operation.
    try (LeaseBackend opened = LeaseBackend.open("kubernetes:?namespace=team-a")) {
      assertThat(opened).isInstanceOf(KubernetesBackend.class);
      assertThat(opened.uri()).isEqualTo("kubernetes:?namespace=team-a");
    }
  }

  private static long token(Lease lease) {
    return Long.parseLong(lease.getMetadata().getAnnotations().get(KubernetesLeaseStore.TOKEN_ANNOTATION));
  }

  private Lease read(String objectName) {
    return admin.resources(Lease.class).inNamespace(MockApiServer.NAMESPACE).withName(objectName).get();
  }

  private String rawJson(String objectName) throws Exception {
    HttpClient http = admin.getHttpClient();
    HttpResponse<String> response =
        http.sendAsync(
                http.newHttpRequestBuilder()
                    .uri(admin.getMasterUrl() + "apis/coordination.k8s.io/v1/namespaces/"
                        + MockApiServer.NAMESPACE + "/leases/" + objectName)
                    .build(),
                String.class)
            .get(10, TimeUnit.SECONDS);
    assertThat(response.code()).isEqualTo(200);
    return response.body();
  }

  private static Lease foreign(String name, String holder, int transitions, ZonedDateTime renewed) {
    return new LeaseBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(MockApiServer.NAMESPACE)
        .endMetadata()
        .withNewSpec()
        .withHolderIdentity(holder)
        .withLeaseDurationSeconds(3)
        .withAcquireTime(renewed)
        .withRenewTime(renewed)
        .withLeaseTransitions(transitions)
        .endSpec()
        .build();
  }
}
