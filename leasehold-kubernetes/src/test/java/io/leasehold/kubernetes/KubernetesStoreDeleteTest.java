package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An operator deletes the Lease object ({@code kubectl delete lease}), while it is held or
 * after. Fencing tokens must still only grow, and nobody else may get the lease before the holder
 * it was deleted under has stopped (docs/architecture.md, "store-side deletes").
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class KubernetesStoreDeleteTest {

  private static final Duration TTL = Duration.ofSeconds(3);

  private final KubernetesFixture fixture = new KubernetesFixture();
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    fixture.close();
  }

  @Test
  void tokensKeepGrowingWhenTheLeaseObjectIsDeletedAndMadeAgain() throws Exception {
    io.leasehold.Lease a = lease(process(), "report", "pod-a");
    io.leasehold.Lease b = lease(process(), "report", "pod-b");
    List<Long> tokens = new ArrayList<>();

    assertThat(a.acquire().get()).isTrue();
    tokens.add(a.fencingToken().orElseThrow());
    a.release().get();
    assertThat(b.acquire().get()).isTrue();
    tokens.add(b.fencingToken().orElseThrow());
    b.release().get();

    delete("report"); // released: nobody holds it, so nobody has to be waited for
    assertThat(a.acquire().get()).as("a deleted, released lease is free at once").isTrue();
    tokens.add(a.fencingToken().orElseThrow());
    a.release().get();
    delete("report");
    assertThat(b.acquire().get()).isTrue();
    tokens.add(b.fencingToken().orElseThrow());

    assertThat(tokens).as("tokens of four tenures, the object deleted twice between them")
        .isSorted().doesNotHaveDuplicates();
  }

  /** The holder is cut off, so it cannot learn of the delete: only its deadline stops it. */
  @Test
  void anObjectDeletedUnderACutOffHolderGoesToNobodyBeforeTheHolderStopped() throws Exception {
    KubernetesFixture.KubernetesContender processA = process();
    io.leasehold.Lease a = lease(processA, "orders", "pod-a");
    io.leasehold.Lease b = lease(process(), "orders", "pod-b");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    assertThat(a.acquire().get()).isTrue();
    long tokenOfA = a.fencingToken().orElseThrow();

    processA.cutOff();
    delete("orders");
    long acquiredByB = keepAcquiring(a, b);

    assertThat(lossesOfA.count()).isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
    assertThat(acquiredByB - lossesOfA.first().atNanos())
        .as("pod-a's onLost ran before pod-b's acquire succeeded")
        .isPositive();
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
  }

  /** The holder is connected: its next renewal must see the delete and stop it. */
  @Test
  void aHolderWhoseObjectIsDeletedStopsBeforeAnotherGetsIt() throws Exception {
    io.leasehold.Lease a = lease(process(), "shard-7", "pod-a");
    io.leasehold.Lease b = lease(process(), "shard-7", "pod-b");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    assertThat(a.acquire().get()).isTrue();
    long tokenOfA = a.fencingToken().orElseThrow();

    delete("shard-7");
    long acquiredByB = keepAcquiring(a, b);

    assertThat(lossesOfA.count()).isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
    assertThat(lossesOfA.first().reason().detail()).contains("delet");
    assertThat(acquiredByB - lossesOfA.first().atNanos())
        .as("pod-a's onLost ran before pod-b's acquire succeeded")
        .isPositive();
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
    assertThat(read("shard-7").getSpec().getHolderIdentity()).isEqualTo(b.holder().toString());
  }

  /** Keeps {@code b} trying until it holds the lease, sampling both; returns when it got it. */
  private static long keepAcquiring(io.leasehold.Lease a, io.leasehold.Lease b) {
    ExclusivityChecker checker = new ExclusivityChecker();
    AtomicLong acquiredAt = new AtomicLong();
    Awaitility.await("pod-b acquires")
        .atMost(TTL.multipliedBy(10))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> {
          checker.sample(b); // the newer holder first
          checker.sample(a);
          if (b.acquire().handle((won, error) -> error == null && won).get()) {
            acquiredAt.set(System.nanoTime());
            return true;
          }
          return false;
        });
    checker.sample(b);
    checker.sample(a);
    checker.assertExclusive();
    return acquiredAt.get();
  }

  private KubernetesFixture.KubernetesContender process() {
    KubernetesFixture.KubernetesContender c = fixture.newContender();
    toClose.add(c);
    return c;
  }

  private static io.leasehold.Lease lease(
      KubernetesFixture.KubernetesContender process, String name, String owner) {
    return process.backend().newLease(SuiteSettings.forTtl(name, owner, TTL).acquireRetries(2).build());
  }

  private void delete(String name) {
    fixture.revokeInStore(name);
  }

  private Lease read(String objectName) {
    return fixture.server().admin().resources(Lease.class)
        .inNamespace(MockApiServer.NAMESPACE).withName(objectName).get();
  }
}
