package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.test.InstanceSpec;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The holder's client is connected to a follower that a partition cuts off from the rest of the
 * ensemble. The follower notices only after {@code syncLimit × tickTime} (here 100 × 50 ms = 5 s)
 * and answers reads from its own copy meanwhile, while the leader, no longer hearing of the
 * holder's session, expires it one session timeout after the follower last reported it. A
 * renewal confirmed by the cut-off follower alone would let the holder run on past that.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperPartitionTest {

  private static final int SYNC_LIMIT_TICKS = 100;
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final String CHROOT = "/partition";

  private PartitionableEnsemble ensemble;
  private InstanceSpec follower;

  @BeforeEach
  void start() {
    ensemble = new PartitionableEnsemble(3, SYNC_LIMIT_TICKS);
    InstanceSpec leader = ensemble.awaitQuorum(Duration.ofSeconds(60));
    follower = ensemble.servers().stream().filter(s -> !s.equals(leader)).findFirst().orElseThrow();
    try (var admin = ZooKeeperServers.admin(ensemble.connectString())) {
      ZooKeeperServers.createPath(admin, CHROOT);
    }
  }

  @AfterEach
  void stop() {
    ensemble.close();
  }

  /** The holder's backend talks to the follower alone; the session timeout follows docs/zookeeper.md. */
  private ZooKeeperBackend holderBackend() {
    return (ZooKeeperBackend) LeaseBackend.open(
        ZooKeeperServers.uri(PartitionableEnsemble.connectString(follower), CHROOT, sessionTimeout()));
  }

  /** TTL + heartbeat + a tick, as docs/zookeeper.md asks of ensembles. */
  private static Duration sessionTimeout() {
    return TTL.plus(TTL.dividedBy(4)).plusMillis(ZooKeeperServers.TICK_MILLIS);
  }

  /** The rest of the ensemble: every server but the holder's. */
  private String othersConnectString() {
    StringBuilder s = new StringBuilder();
    for (InstanceSpec server : ensemble.servers()) {
      if (!server.equals(follower)) {
        s.append(s.length() == 0 ? "" : ",").append(PartitionableEnsemble.connectString(server));
      }
    }
    return s.toString();
  }

  @Test
  void aFollowerCutOffFromTheQuorumConfirmsNoRenewal() throws Exception {
    try (ZooKeeperBackend backend = holderBackend();
        Lease a = backend.newLease(SuiteSettings.forTtl("cut-off", "holder", TTL).build())) {
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      Tenure tenure =
          new Tenure("cut-off", a.holder(), 0, a.fencingToken().orElseThrow(), TTL);

      ensemble.isolate(follower.getServerId());
      // Sent after the partition began: no quorum can have seen it.
      CompletableFuture<RenewResult> renewal = backend.store().renew(tenure, Ticker.system().read());

      Awaitility.await("the renewal is answered")
          .atMost(Duration.ofSeconds(60))
          .until(renewal::isDone);
      assertThat(renewal)
          .as("a renewal that only the cut-off follower saw (it answers reads for %s ticks)",
              SYNC_LIMIT_TICKS)
          .isCompletedExceptionally();
    }
  }

  @Test
  void aHolderOnACutOffFollowerStopsBeforeAnotherGetsTheLease() throws Exception {
    String othersUri = ZooKeeperServers.uri(othersConnectString(), CHROOT, sessionTimeout());
    try (ZooKeeperBackend backend = holderBackend();
        LeaseBackend otherBackend = LeaseBackend.open(othersUri);
        Lease a = backend.newLease(SuiteSettings.forTtl("contested", "holder", TTL).build());
        Lease b = otherBackend.newLease(SuiteSettings.forTtl("contested", "other", TTL).build())) {
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      ExclusivityChecker checker = new ExclusivityChecker();

      ensemble.isolate(follower.getServerId());
      AtomicLong acquiredByB = new AtomicLong();
      Awaitility.await("the other side acquires")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> {
            checker.sample(b); // the newer holder first
            checker.sample(a);
            if (b.acquire().handle((won, error) -> error == null && won).get()) {
              acquiredByB.set(System.nanoTime());
              return true;
            }
            return false;
          });
      checker.sample(b);
      checker.sample(a);

      checker.assertExclusive();
      assertThat(losses.count()).isEqualTo(1);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
      assertThat(acquiredByB.get() - losses.first().atNanos())
          .as("the cut-off holder's onLost ran before the other side acquired")
          .isPositive();
      assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
    }
  }
}
