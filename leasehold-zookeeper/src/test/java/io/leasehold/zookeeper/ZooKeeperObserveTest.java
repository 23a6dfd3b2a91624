package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseSettings;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An observer on ZooKeeper whose connection is cut and reset while the lease changes hands
 * three times: ZooKeeper keeps no history to resume from, so it must be told GAP with the state
 * read again — never a single ACQUIRED as if one change had happened.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperObserveTest {

  private static final String CHROOT = "/observe";
  private static final Duration SESSION = Duration.ofSeconds(5);
  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(CHROOT);

  @Test
  void anObserverWhoseConnectionIsResetWhileTheLeaseChangesHandsIsToldGapWithTheStateReadAgain() {
    List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
    try (TcpProxy proxy = TcpProxy.start(new InetSocketAddress("127.0.0.1", zk.server().getPort()));
        ZooKeeperBackend watcher = backend("127.0.0.1:" + proxy.port());
        ZooKeeperBackend holders = backend(zk.server().getConnectString())) {
      watcher.observe("handed-over", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.newLease(settings("owner-a"));
      Lease b = holders.newLease(settings("owner-b"));

      proxy.blackhole();
      assertThat(a.acquire().join()).isTrue();
      a.release().join();
      assertThat(b.acquire().join()).isTrue();
      long tokenOfB = b.fencingToken().orElseThrow();
      proxy.dropConnections();
      proxy.heal();

      String gap = "GAP owner-b " + tokenOfB;
      await().atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> assertThat(summaries(seen)).as("what the observer was told").contains(gap));
      assertThat(summaries(seen)).containsExactly("CURRENT free", gap);
    }
  }

  /**
   * The observer's events are held back (not its connection reset) while a whole tenure begins and
   * is released: it reads only afterwards, finds the lease free two versions later, and is still
   * told exactly what happened, from the tenure the release recorded on the lease node.
   */
  @Test
  void anObserverThatReadsOnlyAfterAWholeTenureIsToldItsAcquireAndRelease() {
    List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
    try (TcpProxy proxy = TcpProxy.start(new InetSocketAddress("127.0.0.1", zk.server().getPort()));
        ZooKeeperBackend watcher = backend("127.0.0.1:" + proxy.port());
        ZooKeeperBackend holders = backend(zk.server().getConnectString())) {
      watcher.observe("unseen", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.newLease(SuiteSettings.forTtl("unseen", "owner-a", SESSION).build());

      proxy.blackhole(); // shorter than the session's read timeout: no reconnect
      assertThat(a.acquire().join()).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      a.release().join();
      proxy.heal();

      await().atMost(Duration.ofSeconds(30)).untilAsserted(
          () -> assertThat(summaries(seen)).as("what the observer was told").hasSizeGreaterThanOrEqualTo(3));
      assertThat(summaries(seen))
          .containsExactly("CURRENT free", "ACQUIRED owner-a " + tokenOfA, "RELEASED owner-a " + tokenOfA);
    }
  }

  @Test
  void anObserverIsToldEveryChangeWhileConnectedWithTheirTokensAndStartTimes() {
    List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
    try (ZooKeeperBackend watcher = backend(zk.server().getConnectString());
        ZooKeeperBackend holders = backend(zk.server().getConnectString())) {
      watcher.observe("connected", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.newLease(SuiteSettings.forTtl("connected", "owner-a", SESSION).build());
      assertThat(a.acquire().join()).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() >= 2);
      a.release().join();
      await().atMost(Duration.ofSeconds(30)).untilAsserted(
          () -> assertThat(summaries(seen)).as("what the observer was told").hasSizeGreaterThanOrEqualTo(3));
      assertThat(summaries(seen))
          .containsExactly("CURRENT free", "ACQUIRED owner-a " + tokenOfA, "RELEASED owner-a " + tokenOfA);
      assertThat(seen.get(1).holding().orElseThrow().since()).as("the holder node's ctime").isPresent();
    }
  }

  private static ZooKeeperBackend backend(String hostPorts) {
    return ZooKeeperBackend.open(ZooKeeperUri.parse(ZooKeeperServers.uri(hostPorts, CHROOT, SESSION)));
  }

  private static LeaseSettings settings(String owner) {
    return SuiteSettings.forTtl("handed-over", owner, SESSION).build();
  }

  private static List<String> summaries(List<LeaseEvent> seen) {
    return seen.stream()
        .map(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
        .toList();
  }
}
