package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.Ticker;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingZooKeeperServer;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Store failover: a 3-server ensemble loses the server the holder is connected to, or its leader,
 * while a lease is held and another process keeps trying to take it.
 *
 * <p>What happens, pinned down: the ZooKeeper session survives the loss of one server (the client
 * moves to another server and a new leader re-arms every session), so the holder node survives
 * too. While the client is disconnected nothing renews the lease, so:
 *
 * <ul>
 *   <li>with a TTL comfortably above election plus reconnect (the client's random back-off of up
 *       to a second between attempts), the lease is <b>held through</b>: same session, same
 *       tenure and token, no {@code onLost}, and the other process never gets it;</li>
 *   <li>when the recovery takes longer than the holder's remaining safe window, the holder
 *       <b>loses the lease first</b> ({@code onLost}, EXPIRED) and only then can the other process
 *       get it, with a greater token.</li>
 * </ul>
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperFailoverTest {

  /** Comfortably above election plus reconnect (2-3 s here on a loaded machine). */
  private static final Duration LONG_TTL = Duration.ofSeconds(8);

  /** Below election plus reconnect, mostly. */
  private static final Duration SHORT_TTL = Duration.ofSeconds(1);
  private static final String CHROOT = "/failover";

  private static TestingCluster cluster;
  private InstanceSpec killed;

  @BeforeAll
  static void startEnsemble() {
    cluster = ZooKeeperServers.ensemble(3);
    try (var admin = ZooKeeperServers.admin(cluster.getConnectString())) {
      ZooKeeperServers.createPath(admin, CHROOT);
    }
  }

  @AfterAll
  static void stopEnsemble() {
    ZooKeeperServers.closeQuietly(cluster);
  }

  @AfterEach
  void restartKilledServer() throws Exception {
    if (killed != null) {
      cluster.restartServer(killed);
      awaitQuorumOf(3);
    }
  }

  @Test
  void aLeaseIsHeldThroughTheLossOfTheServerItsClientIsConnectedTo() throws Exception {
    Outcome outcome = failover("connected", LONG_TTL, this::connectedServer);
    outcome.assertHeldThrough();
  }

  @Test
  void aLeaseIsHeldThroughTheLossOfTheEnsembleLeader() throws Exception {
    Outcome outcome = failover("leader", LONG_TTL, holder -> leader().getInstanceSpec());
    outcome.assertHeldThrough();
  }

  /**
   * With a TTL shorter than the election and the client's reconnect, the holder cannot renew in
   * time: it must stop (onLost, EXPIRED) before the other process gets the lease. Whether a given
   * run gets there depends on how fast the ensemble recovers; either way, never two holders.
   */
  @Test
  void aFailoverSlowerThanTheSafeWindowEndsTheLeaseBeforeAnyoneElseGetsIt() throws Exception {
    Outcome outcome = failover("leader-short-ttl", SHORT_TTL, holder -> leader().getInstanceSpec());
    outcome.assertSafe();
  }

  private InstanceSpec connectedServer(ZooKeeperBackend holder) {
    try {
      return cluster.findConnectionInstance(holder.zooKeeper());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** What the holder and the other process saw across one failover. */
  private record Outcome(
      LossRecorder losses, long token, OptionalLong tokenAfter, long sessionBefore,
      long sessionAfter, long otherAcquiredAt, OptionalLong otherToken,
      ExclusivityChecker checker) {

    void assertHeldThrough() {
      assertThat(losses.count()).as("onLost calls of the holder").isZero();
      assertThat(tokenAfter).as("the holder's token after the failover").hasValue(token);
      assertThat(sessionAfter).as("the same ZooKeeper session").isEqualTo(sessionBefore);
      assertThat(otherAcquiredAt).as("the other process never acquired").isZero();
      checker.assertExclusive();
    }

    void assertSafe() {
      checker.assertExclusive();
      if (losses.count() == 0) {
        assertHeldThrough();
        return;
      }
      assertThat(losses.count()).isEqualTo(1);
      assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
      if (otherAcquiredAt != 0) {
        assertThat(otherAcquiredAt - losses.first().atNanos())
            .as("the holder's onLost ran before the other process acquired")
            .isPositive();
        assertThat(otherToken.orElseThrow()).isGreaterThan(token);
      }
    }
  }

  private Outcome failover(String which, Duration ttl, Function<ZooKeeperBackend, InstanceSpec> victim)
      throws Exception {
    String uri = ZooKeeperServers.uri(cluster.getConnectString(), CHROOT, ttl);
    String name = "failover-" + which;
    try (ZooKeeperBackend holderBackend = (ZooKeeperBackend) LeaseBackend.open(uri);
        LeaseBackend otherBackend = LeaseBackend.open(uri);
        Lease a = holderBackend.newLease(SuiteSettings.forTtl(name, "holder", ttl).build());
        Lease b = otherBackend.newLease(SuiteSettings.forTtl(name, "other", ttl).build())) {
      LossRecorder losses = new LossRecorder(Ticker.system());
      a.onLost(losses);
      ExclusivityChecker checker = new ExclusivityChecker();
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = a.fencingToken().orElseThrow();
      long session = holderBackend.zooKeeper().getSessionId();

      killed = victim.apply(holderBackend);
      assertThat(cluster.killServer(killed)).as("killed %s server %s", which, killed).isTrue();

      // Until the holder has renewed on the recovered ensemble (or lost the lease), and a TTL
      // more; all along the other process keeps trying to acquire.
      AtomicLong otherAcquiredAt = new AtomicLong();
      AtomicLong settledAt = new AtomicLong();
      Awaitility.await(which + " failover settles")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> {
            checker.sample(b); // the newer holder first
            checker.sample(a);
            if (otherAcquiredAt.get() == 0) {
              // During the election attempts may also fail ("unknown"); that is no win.
              boolean won = b.acquire().handle((w, error) -> error == null && w)
                  .get(ttl.toMillis() * 5, TimeUnit.MILLISECONDS);
              if (won) {
                otherAcquiredAt.set(System.nanoTime());
              }
            }
            if (settledAt.get() == 0 && (losses.count() > 0 || renewedAfterFailover(holderBackend, a, ttl))) {
              settledAt.set(System.nanoTime());
            }
            return settledAt.get() != 0 && System.nanoTime() - settledAt.get() >= ttl.toNanos();
          });

      return new Outcome(losses, token, a.fencingToken(), session,
          holderBackend.zooKeeper().getSessionId(), otherAcquiredAt.get(), b.fencingToken(), checker);
    }
  }

  /** Connected again, and a confirming acquire (a renewal round trip) succeeded. */
  private static boolean renewedAfterFailover(ZooKeeperBackend backend, Lease a, Duration ttl)
      throws Exception {
    return backend.awaitConnected(Duration.ZERO)
        && a.acquire().handle((held, error) -> error == null && held)
            .get(ttl.toMillis() * 5, TimeUnit.MILLISECONDS);
  }

  private static TestingZooKeeperServer leader() {
    return Awaitility.await("a leader")
        .atMost(Duration.ofSeconds(30))
        .until(() -> serverInMode("leader"), s -> s != null);
  }

  private static TestingZooKeeperServer serverInMode(String mode) {
    for (TestingZooKeeperServer s : cluster.getServers()) {
      if (mode.equals(mode(s.getInstanceSpec()))) {
        return s;
      }
    }
    return null;
  }

  /** The server's role as its {@code srvr} command reports it: leader, follower, or null. */
  private static String mode(InstanceSpec spec) {
    try {
      String status = FourLetterWordMain.send4LetterWord("127.0.0.1", spec.getPort(), "srvr");
      for (String line : status.split("\n")) {
        if (line.startsWith("Mode: ")) {
          return line.substring("Mode: ".length()).strip();
        }
      }
      return null;
    } catch (Exception notServing) {
      return null;
    }
  }

  private static void awaitQuorumOf(int size) {
    Awaitility.await("all " + size + " servers serving")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .until(() -> cluster.getInstances().stream()
            .map(ZooKeeperFailoverTest::mode)
            .filter(m -> "leader".equals(m) || "follower".equals(m))
            .count() == size);
  }
}
