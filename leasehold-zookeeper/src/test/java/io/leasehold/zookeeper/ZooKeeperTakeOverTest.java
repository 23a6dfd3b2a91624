package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Another holder takes the lease over while the first still believes it holds it, and the first
 * is told why it lost it. ZooKeeper says {@code TAKEN_OVER} where the holder reads its holder node
 * and finds another tenure's node in its place; where what it learns is that its session ended, it
 * says {@code REVOKED}, whoever comes next (docs/zookeeper.md, "Why a lease was lost").
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperTakeOverTest {

  private static final String CHROOT = "/take-over";
  /** Long enough that no deadline passes in a test: every loss here is the store's word. */
  private static final Duration TTL = Duration.ofSeconds(10);

  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(CHROOT);

  /**
   * {@code deleteall} of the lease node frees the name at once (docs/zookeeper.md), so owner-b
   * gets it while owner-a's watch event is still held back; owner-a's acquire then reads owner-b's
   * node where its own was.
   */
  @Test
  void aHolderWhoseAcquireFindsAnotherTenuresNodeIsToldTakenOverAndGetsFalse() throws Exception {
    try (ZooKeeperBackend backendA = open(zk.server().getConnectString());
        ZooKeeperBackend backendB = open(zk.server().getConnectString())) {
      Lease a = backendA.newLease(SuiteSettings.forTtl("acquired-over", "owner-a", TTL).build());
      Lease b = backendB.newLease(SuiteSettings.forTtl("acquired-over", "owner-b", TTL).build());
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      assertThat(a.acquire().get()).isTrue();
      HeldBackEvents events = new HeldBackEvents();
      backendA.store().handleHolderEventsOn(events);

      deleteAll("acquired-over");
      assertThat(b.acquire().get()).as("owner-b acquires the freed name").isTrue();
      await("the watch event reaches owner-a, and is held back")
          .atMost(Duration.ofSeconds(30))
          .until(() -> events.count() > 0);

      assertThat(a.acquire().get()).as("owner-a acquires again while owner-b holds it").isFalse();
      assertThat(losses.count()).isEqualTo(1);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.TAKEN_OVER);
      assertThat(losses.first().reason().detail()).contains("owner-b");
      assertThat(b.checkAlive()).isTrue();
    }
  }

  /** As above, but owner-a learns from its watch, once the held-back event is let through. */
  @Test
  void aHolderWhoseWatchFindsAnotherTenuresNodeIsToldTakenOver() throws Exception {
    try (ZooKeeperBackend backendA = open(zk.server().getConnectString());
        ZooKeeperBackend backendB = open(zk.server().getConnectString())) {
      Lease a = backendA.newLease(SuiteSettings.forTtl("watched-over", "owner-a", TTL).build());
      Lease b = backendB.newLease(SuiteSettings.forTtl("watched-over", "owner-b", TTL).build());
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      assertThat(a.acquire().get()).isTrue();
      HeldBackEvents events = new HeldBackEvents();
      backendA.store().handleHolderEventsOn(events);

      deleteAll("watched-over");
      assertThat(b.acquire().get()).as("owner-b acquires the freed name").isTrue();
      await("the watch event reaches owner-a, and is held back")
          .atMost(Duration.ofSeconds(30))
          .until(() -> events.count() > 0);
      events.release();

      await("owner-a's onLost").atMost(Duration.ofSeconds(30)).until(() -> losses.count() > 0);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.TAKEN_OVER);
      assertThat(losses.first().reason().detail()).contains("owner-b");
      assertThat(a.checkAlive()).isFalse();
      assertThat(b.checkAlive()).isTrue();
      assertThat(losses.count()).isEqualTo(1);
    }
  }

  /**
   * owner-a's session is closed on the server (by a second handle on the same session, the way
   * ZooKeeper's own tests expire one) while owner-a cannot hear of it; its ephemeral nodes go, and
   * owner-b acquires at once. What owner-a learns when it is back is that its session expired, not
   * who holds the name now: {@code REVOKED}.
   */
  @Test
  void aHolderWhoseSessionEndedOnTheServerIsToldRevokedThoughAnotherHoldsTheLeaseNow()
      throws Exception {
    try (TcpProxy proxy = TcpProxy.start(new InetSocketAddress("127.0.0.1", zk.server().getPort()));
        ZooKeeperBackend backendA = open("127.0.0.1:" + proxy.port());
        ZooKeeperBackend backendB = open(zk.server().getConnectString())) {
      Lease a = backendA.newLease(SuiteSettings.forTtl("session-over", "owner-a", TTL).build());
      Lease b = backendB.newLease(SuiteSettings.forTtl("session-over", "owner-b", TTL).build());
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      assertThat(a.acquire().get()).isTrue();
      ZooKeeper sessionOfA = backendA.zooKeeper();

      proxy.blackhole(); // owner-a reconnecting now would take its session back from the closer
      closeSession(sessionOfA.getSessionId(), sessionOfA.getSessionPasswd());
      assertThat(b.acquire().get()).as("owner-b acquires: owner-a's session has ended").isTrue();
      proxy.dropConnections();
      proxy.heal();

      await("owner-a's onLost").atMost(Duration.ofSeconds(30)).until(() -> losses.count() > 0);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
      assertThat(a.checkAlive()).isFalse();
      assertThat(b.checkAlive()).isTrue();
      assertThat(losses.count()).isEqualTo(1);
    }
  }

  /** Attaches to session {@code id} directly (not through the proxy) and closes it. */
  private static void closeSession(long id, byte[] password) throws Exception {
    ZooKeeper closer = new ZooKeeper(zk.server().getConnectString(), (int) TTL.toMillis(), event -> {},
        id, password);
    try {
      await("the second handle is connected to owner-a's session")
          .atMost(Duration.ofSeconds(30))
          .until(() -> closer.getState() == ZooKeeper.States.CONNECTED);
    } finally {
      closer.close();
    }
  }

  private static void deleteAll(String leaseName) throws Exception {
    zk.admin().delete().deletingChildrenIfNeeded().forPath(CHROOT + ZNodes.leaseNode(leaseName));
  }

  private static ZooKeeperBackend open(String hostPorts) {
    return ZooKeeperBackend.open(ZooKeeperUri.parse(ZooKeeperServers.uri(hostPorts, CHROOT, TTL)));
  }
}
