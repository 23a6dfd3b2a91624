package io.leasehold.recipes.election;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A singleton on a real 3-node core: leadership moves when the leader is cut off, never doubles. */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class LeaderElectionOnCoreTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  private final List<AutoCloseable> resources = new ArrayList<>();
  /** Which election's work runs now (0: none); a second one starting while set is an overlap. */
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicInteger overlaps = new AtomicInteger();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T resource) {
    resources.add(resource);
    return resource;
  }

  private LeaderWork work(int id) {
    return ctx -> {
      if (!running.compareAndSet(0, id)) {
        overlaps.incrementAndGet();
      }
      try {
        while (ctx.isLeader() && !Thread.currentThread().isInterrupted()) {
          LockSupport.parkNanos(1_000_000); // the leader's "work": one step a millisecond
        }
      } finally {
        running.compareAndSet(id, 0);
      }
    };
  }

  private LeaderElection election(LeaseBackend backend, String owner, int id) {
    Lease lease = closeLater(backend.newLease(SuiteSettings.forTtl("singleton", owner, TTL).build()));
    return closeLater(
        LeaderElection.builder(lease, work(id)).backoff(Duration.ofMillis(50), Duration.ofMillis(200)).build().start());
  }

  @Test
  void leadershipMovesWhenTheLeaderIsCutOffAndTwoWorksNeverRunAtOnce() throws Exception {
    LocalCluster cluster =
        closeLater(
            LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "election-"),
                c -> c.withElectionTimeout(Duration.ofMillis(150))));
    List<TcpProxy> proxies = new ArrayList<>();
    for (Peer p : cluster.peers()) {
      proxies.add(closeLater(TcpProxy.start(new InetSocketAddress(p.host(), p.clientPort()))));
    }
    String proxiedUri =
        "leasehold://" + proxies.stream().map(p -> "127.0.0.1:" + p.port()).collect(Collectors.joining(","));

    LeaderElection first = election(closeLater(LeaseBackend.open(proxiedUri)), "first", 1);
    await("the first process leads").atMost(Duration.ofSeconds(20)).until(first::isLeader);
    LeaderElection second = election(closeLater(LeaseBackend.open(cluster.uri())), "second", 2);

    proxies.forEach(TcpProxy::blackhole);
    await("the second process leads once the first is cut off")
        .atMost(Duration.ofSeconds(20))
        .until(() -> second.isLeader() && running.get() == 2);
    assertThat(first.isLeader()).isFalse();

    proxies.forEach(TcpProxy::heal);
    await("the healed first process stays a follower while the second leads")
        .during(TTL)
        .atMost(TTL.multipliedBy(3))
        .until(() -> !first.isLeader() && second.isLeader());
    assertThat(overlaps.get()).as("times a work started while another ran").isZero();
  }
}
