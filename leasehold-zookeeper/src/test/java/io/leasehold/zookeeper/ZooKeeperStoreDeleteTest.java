package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.net.InetSocketAddress;
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
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An operator deletes a lease's znodes ({@code delete .../holder}, or {@code deleteall} of the
 * lease node) while it is held or after. Fencing tokens must still only grow, and nobody else may
 * get the lease before the holder it was deleted under has stopped (docs/architecture.md,
 * "store-side deletes").
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperStoreDeleteTest {

  private static final Duration TTL = Duration.ofSeconds(1);

  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(ZooKeeperFixture.CHROOT);

  private final ZooKeeperFixture fixture =
      new ZooKeeperFixture(new InetSocketAddress("127.0.0.1", zk.server().getPort()), zk.admin(), TTL);
  private final List<AutoCloseable> toClose = new ArrayList<>();


  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    fixture.close();
  }

  /** The holder is cut off, so it cannot learn of the delete: only its deadline stops it. */
  @Test
  void aHolderNodeDeletedUnderACutOffHolderGoesToNobodyBeforeTheHolderStopped() throws Exception {
    ZooKeeperFixture.ZooKeeperContender processA = process();
    Lease a = lease(processA, "orders", "owner-a");
    Lease b = lease(process(), "orders", "owner-b");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    assertThat(a.acquire().get()).isTrue();
    long tokenOfA = a.fencingToken().orElseThrow();

    processA.cutOff();
    fixture.revokeInStore("orders");
    long acquiredByB = keepAcquiring(a, b);

    assertThat(lossesOfA.count()).isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
    assertThat(acquiredByB - lossesOfA.first().atNanos())
        .as("owner-a's onLost ran before owner-b's acquire succeeded")
        .isPositive();
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
  }

  /** The holder is connected: it sees the delete (its watch, its next renewal) and stops first. */
  @Test
  void aHolderWhoseNodeIsDeletedStopsBeforeAnotherGetsIt() throws Exception {
    Lease a = lease(process(), "shard-7", "owner-a");
    Lease b = lease(process(), "shard-7", "owner-b");
    LossRecorder lossesOfA = new LossRecorder(Ticker.system());
    a.onLost(lossesOfA);
    assertThat(a.acquire().get()).isTrue();
    long tokenOfA = a.fencingToken().orElseThrow();

    fixture.revokeInStore("shard-7");
    long acquiredByB = keepAcquiring(a, b);

    assertThat(lossesOfA.count()).isEqualTo(1);
    assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
    assertThat(acquiredByB - lossesOfA.first().atNanos())
        .as("owner-a's onLost ran before owner-b's acquire succeeded")
        .isPositive();
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
  }

  /** Tokens are zxids: they grow whatever is deleted, the lease node included. */
  @Test
  void tokensKeepGrowingWhenTheLeaseNodesAreDeleted() throws Exception {
    Lease a = lease(process(), "report", "owner-a");
    Lease b = lease(process(), "report", "owner-b");
    List<Long> tokens = new ArrayList<>();

    assertThat(a.acquire().get()).isTrue();
    tokens.add(a.fencingToken().orElseThrow());
    a.release().get();
    deleteAll("report");
    assertThat(b.acquire().get()).as("a released lease is free at once").isTrue();
    tokens.add(b.fencingToken().orElseThrow());
    b.release().get();
    deleteAll("report");
    assertThat(a.acquire().get()).isTrue();
    tokens.add(a.fencingToken().orElseThrow());

    assertThat(tokens).isSorted().doesNotHaveDuplicates();
  }

  /** Keeps {@code b} trying until it holds the lease, sampling both; returns when it got it. */
  private static long keepAcquiring(Lease a, Lease b) {
    ExclusivityChecker checker = new ExclusivityChecker();
    AtomicLong acquiredAt = new AtomicLong();
    Awaitility.await("owner-b acquires")
        .atMost(TTL.multipliedBy(20))
        .pollInterval(Duration.ofMillis(20))
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

  private void deleteAll(String leaseName) throws Exception {
    zk.admin().delete().deletingChildrenIfNeeded().forPath(ZooKeeperFixture.CHROOT + ZNodes.leaseNode(leaseName));
  }

  private ZooKeeperFixture.ZooKeeperContender process() {
    ZooKeeperFixture.ZooKeeperContender c = (ZooKeeperFixture.ZooKeeperContender) fixture.newContender();
    toClose.add(c);
    return c;
  }

  private static Lease lease(ZooKeeperFixture.ZooKeeperContender process, String name, String owner) {
    return process.backend().newLease(SuiteSettings.forTtl(name, owner, TTL).build());
  }
}
