package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An operator's delete of a held lease on the core, while the node that serves the holder's watch
 * has gone silent (the holder's connection to it is black-holed, not reset, so the watch neither
 * delivers nor fails for many seconds) and its keep-alives are answered by another node. Safety
 * must not rest on the watch: nobody else may get the name while the holder still believes it
 * holds it, and {@code acquire()} while holding must ask the store, not a cached keep-alive.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreRevocationTest {

  /** Longer than the suite's 2 s: on a loaded two-core machine the test cluster's elections flap. */
  private static final Duration TTL = Duration.ofSeconds(5);
  private static final Duration PATIENCE = Duration.ofSeconds(30);

  private static LocalCluster cluster;
  private final List<AutoCloseable> closeLater = new ArrayList<>();

  @BeforeAll
  static void startCluster() {
    try {
      // A calmer election timeout than the suite's 150 ms: a flapping leader would make the
      // holder lose by its deadline before the scenario starts.
      Path root = Files.createTempDirectory(Path.of("target"), "revocation-");
      cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(500)));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
  }

  @Test
  void anOperatorsDeleteGoesToNobodyElseWhileTheHolderStillHoldsEvenIfItsWatchIsSilent() throws Exception {
    CoreFixture.CoreContender processA = contender();
    Lease a = lease(processA, "silent-watch", "owner-a");
    Lease b = lease(contender(), "silent-watch", "owner-b");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    long tokenOfA = holdWithSilentWatch(processA, a);

    operatorDeletes("silent-watch");
    ExclusivityChecker checker = new ExclusivityChecker();
    long acquiredByB =
        keepAcquiring(
            b,
            () -> {
              checker.sample(a);
              checker.sample(b);
            });
    checker.sample(b);
    checker.sample(a);

    assertThat(a.checkAlive()).as("owner-a's checkAlive() once owner-b holds the lease").isFalse();
    assertThat(lossesOfA.count()).as("owner-a's onLost calls once owner-b holds the lease").isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind())
        .as("owner-a learned of the revocation from its keep-alives, not from its deadline")
        .isEqualTo(LeaseLost.Kind.REVOKED);
    assertThat(acquiredByB - lossesOfA.first().atNanos())
        .as("owner-a's onLost ran before owner-b's acquire succeeded")
        .isPositive();
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
    checker.assertExclusive();
  }

  @Test
  void acquireWhileHoldingAfterAnOperatorsDeleteDoesNotConfirmTheRevokedTenure() throws Exception {
    CoreFixture.CoreContender processA = contender();
    Lease a = lease(processA, "confirm-after-delete", "owner-a");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    long tokenOfA = holdWithSilentWatch(processA, a);

    operatorDeletes("confirm-after-delete");
    // After the loss, acquire() tries afresh; on a loaded machine that may time out: also fine.
    boolean acquired = a.acquire().handle((won, error) -> error == null && won).get(10, TimeUnit.SECONDS);

    assertThat(acquired && a.fencingToken().orElse(0) == tokenOfA)
        .as("acquire() confirmed tenure %d although an operator had deleted it", tokenOfA)
        .isFalse();
    assertThat(lossesOfA.count()).as("onLost calls by the time acquire() answered").isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
    if (acquired) {
      assertThat(a.fencingToken().orElseThrow()).as("a new tenure's token").isGreaterThan(tokenOfA);
    }
  }

  /**
   * Acquires, then cuts the holder off from the node that serves its watch — the node its client
   * sent the acquire to, since the watch is (re)opened there when a tenure begins — and waits until
   * its keep-alives go to another node.
   */
  private static long holdWithSilentWatch(CoreFixture.CoreContender process, Lease lease) throws Exception {
    cluster.awaitLeader(PATIENCE);
    assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();
    long token = lease.fencingToken().orElseThrow();
    long cutAt = System.nanoTime();
    process.cutOffFrom(((CoreBackend) process.backend()).client().currentNode());
    // A renewal sent after the cut succeeded: the deadline it set lies more than a whole safe
    // window after the cut.
    long window = lease.settings().safeWindow().toNanos();
    // checkAlive() is read in the same condition: read after it, a loaded machine could have
    // moved on (and the scenario needs the lease alive when the operator deletes it).
    await("a renewal of the holder succeeds through another node, and it still holds")
        .atMost(TTL.multipliedBy(3))
        .until(() -> System.nanoTime() + lease.remaining().toNanos() - cutAt > window && lease.checkAlive());
    return token;
  }

  private static void operatorDeletes(String leaseName) throws Exception {
    try (CoreClient admin = new CoreClient(CoreFixture.endpoints(cluster.peers()), Duration.ofSeconds(2))) {
      DeleteRequest delete =
          DeleteRequest.newBuilder().setCall(admin.newCall()).setKey(LeaseWatch.LEASE_PREFIX + leaseName).build();
      DeleteResponse response = admin.<DeleteResponse>call((stub, out) -> stub.delete(delete, out)).get(10, TimeUnit.SECONDS);
      assertThat(response.getDeleted()).as("the operator's delete found the record").isTrue();
    }
  }

  /** Acquires over and over until it succeeds; returns when (System.nanoTime()) it did. */
  private static long keepAcquiring(Lease lease, Runnable eachRound) {
    AtomicLong acquiredAt = new AtomicLong();
    await(lease.owner() + " acquires " + lease.name())
        .atMost(PATIENCE)
        .pollDelay(Duration.ZERO)
        .pollInterval(TTL.dividedBy(20))
        .until(
            () -> {
              eachRound.run();
              if (lease.acquire().get(10, TimeUnit.SECONDS)) {
                acquiredAt.set(System.nanoTime());
                return true;
              }
              return false;
            });
    return acquiredAt.get();
  }

  private CoreFixture.CoreContender contender() {
    CoreFixture.CoreContender c = new CoreFixture.CoreContender(cluster.peers());
    closeLater.add(c);
    return c;
  }

  private Lease lease(CoreFixture.CoreContender process, String name, String owner) {
    // Retries: a first acquire on a cold, loaded machine may take longer than its 400 ms timeout.
    Lease lease = process.backend().newLease(SuiteSettings.forTtl(name, owner, TTL).acquireRetries(5).build());
    closeLater.add(lease);
    return lease;
  }
}
