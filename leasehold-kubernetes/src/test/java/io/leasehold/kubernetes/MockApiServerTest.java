package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pins what the backend's safety rests on and what the mock must do as an API server does: a
 * write on a stale {@code resourceVersion} — a replace (our writes) or a JSON merge patch (fabric8's
 * {@code LeaseLock}) — is refused with 409 and changes nothing, and a second create of the same
 * name is refused with 409. If a new fabric8 version's mock stopped doing this, the contract suite
 * could pass against a store that lets two writers win; this test would fail first.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class MockApiServerTest {

  private final MockApiServer server = new MockApiServer();
  private final KubernetesClient client = server.admin();

  @AfterEach
  void stop() {
    server.close();
  }

  @Test
  void aReplaceOnAStaleResourceVersionIsRefusedWith409AndChangesNothing() {
    Lease created = client.resource(lease("pinned", "first")).create();
    String stale = created.getMetadata().getResourceVersion();
    Lease updated = client.resource(withHolder(created, "second")).update();
    assertThat(updated.getMetadata().getResourceVersion()).isNotEqualTo(stale);

    Lease late = withHolder(created, "late"); // still carries the stale resourceVersion
    assertThatThrownBy(() -> client.resource(late).update())
        .isInstanceOfSatisfying(
            KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));

    assertThat(read("pinned").getSpec().getHolderIdentity()).isEqualTo("second");
  }

  @Test
  void aMergePatchOnAStaleResourceVersionIsRefusedWith409() {
    Lease created = client.resource(lease("patched", "first")).create();
    client.resource(withHolder(created, "second")).update();

    assertThatThrownBy(
            () ->
                client
                    .resource(withHolder(created, "late"))
                    .patch(PatchContext.of(PatchType.JSON_MERGE)))
        .isInstanceOfSatisfying(
            KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
    assertThat(read("patched").getSpec().getHolderIdentity()).isEqualTo("second");
  }

  @Test
  void aSecondCreateOfTheSameNameIsRefusedWith409() {
    client.resource(lease("twice", "first")).create();

    assertThatThrownBy(() -> client.resource(lease("twice", "second")).create())
        .isInstanceOfSatisfying(
            KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
    assertThat(read("twice").getSpec().getHolderIdentity()).isEqualTo("first");
  }

  private Lease read(String name) {
    return client.resources(Lease.class).inNamespace(MockApiServer.NAMESPACE).withName(name).get();
  }

  private static Lease lease(String name, String holder) {
    return new LeaseBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(MockApiServer.NAMESPACE)
        .endMetadata()
        .withNewSpec()
        .withHolderIdentity(holder)
        .withLeaseDurationSeconds(1)
        .withLeaseTransitions(0)
        .endSpec()
        .build();
  }

  private static Lease withHolder(Lease base, String holder) {
    return new LeaseBuilder(base).editSpec().withHolderIdentity(holder).endSpec().build();
  }
}
