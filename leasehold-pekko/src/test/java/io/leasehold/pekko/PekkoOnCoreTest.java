package io.leasehold.pekko;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.TcpProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pekko's Cluster Singleton and Cluster Sharding with their leases on a real 3-node Leasehold
 * core in this JVM. Node A reaches the core through TCP proxies of its own, so a test can cut A
 * off from the core while B keeps it; the Pekko cluster is split with Artery's test black hole
 * and A downed from B's side.
 */
@Timeout(150)
@Tag("integration")
class PekkoOnCoreTest {

  private static LocalCluster core;

  private final List<TcpProxy> proxiesOfA = new ArrayList<>();
  private TestCluster cluster;

  @BeforeAll
  static void startCore() throws IOException {
    Path root = Files.createTempDirectory(Path.of("target"), "pekko-core-");
    core = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(150)));
  }

  @AfterAll
  static void stopCore() {
    core.close();
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    proxiesOfA.forEach(TcpProxy::close);
  }

  /** The core's URI through new proxies, one per node, that {@link #cutAOffTheCore()} black-holes. */
  private String proxiedUri() {
    for (var peer : core.peers()) {
      proxiesOfA.add(TcpProxy.start(new InetSocketAddress(peer.host(), peer.clientPort())));
    }
    return "leasehold://"
        + proxiesOfA.stream().map(p -> "127.0.0.1:" + p.port()).collect(Collectors.joining(","));
  }

  private void cutAOffTheCore() {
    proxiesOfA.forEach(TcpProxy::blackhole);
  }

  private ActorSystem[] singletonOnA(String name, TenureLog log) {
    cluster = new TestCluster(name);
    ActorSystem a = cluster.start(TestCluster.config(proxiedUri(), ""));
    ActorSystem b = cluster.start(TestCluster.config(core.uri(), ""));
    cluster.awaitUp();
    SingletonWorker.startManager(a, log, "A");
    SingletonWorker.startManager(b, log, "B");
    await("the singleton started on A")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "A") > 0);
    return new ActorSystem[] {a, b};
  }

  @Test
  void singletonOnTheCoreMovesOnlyAfterTheCutOffHolderStopped() {
    TenureLog log = new TenureLog();
    ActorSystem[] ab = singletonOnA("core-singleton-cut", log);

    cutAOffTheCore();
    cluster.partition(ab[0]);
    cluster.down(ab[1], ab[0]);

    await("the singleton started on B")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "B") > 5);
    assertThat(log.violations()).as("history:\n%s", log).isEmpty();
    assertThat(log.startTokens("B").get(0)).isGreaterThan(log.startTokens("A").get(0));
  }

  /**
   * Split brain: B no longer sees A and downs it, but A still reaches the core and keeps its
   * lease. B's singleton manager asks for the lease and is refused while A holds it, so the
   * singleton does not start twice; once A's actor system terminates (its backend closes and
   * releases the lease), B gets the lease and the singleton starts there.
   */
  @Test
  void inASplitBrainTheOtherSideWaitsForTheLeaseWhileTheHolderStillRenewsIt() throws Exception {
    TenureLog log = new TenureLog();
    ActorSystem[] ab = singletonOnA("core-singleton-split", log);
    ActorSystem a = ab[0], b = ab[1];

    cluster.partition(a);
    cluster.down(b, a);

    LeaseholdLease leaseOfB =
        LeaseholdPekko.get(b).lease(SingletonWorker.leaseName(b)).orElseThrow();
    await("B asked for the lease and was refused")
        .atMost(TestCluster.PATIENCE)
        .until(() -> leaseOfB.leaseholdLease().lastKnownHolder().isPresent());
    assertThat(leaseOfB.leaseholdLease().lastKnownHolder().get())
        .as("refused because A holds it")
        .startsWith(TestCluster.address(a).hostPort() + "#");

    a.terminate();
    a.getWhenTerminated().toCompletableFuture().get(20, java.util.concurrent.TimeUnit.SECONDS);
    await("the singleton started on B")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "B") > 0);
    assertThat(log.violations()).as("history:\n%s", log).isEmpty();
  }

  /**
   * Cluster Sharding with the coordinator singleton's lease and every shard's lease on the core.
   * The coordinator allocates only through {@link LeaseGatedAllocationStrategy}; every allocation
   * is written with the coordinator lease's token. When A (coordinator, and home of shards 0 and
   * 1) is cut off from the core and the cluster, its shards and its coordinator stop, B's
   * coordinator takes over with a greater token, and no shard runs on two nodes at once.
   */
  @Test
  void shardingCoordinatorAndShardsOnTheCoreMoveOnlyUnderTheirLeases() {
    String lease = "\"leasehold.pekko.lease\"";
    String sharding =
        """
        pekko.cluster.sharding {
          use-lease = %s
          lease-retry-interval = 100ms
          coordinator-singleton.use-lease = %s
          coordinator-singleton.lease-retry-interval = 100ms
          retry-interval = 200ms
          shard-start-timeout = 1s
          updating-state-timeout = 1s
          waiting-for-state-timeout = 1s
          coordinator-state.write-majority-plus = 0
          coordinator-state.read-majority-plus = 0
        }
        """
            .formatted(lease, lease);
    cluster = new TestCluster("core-sharding");
    ActorSystem a = cluster.start(TestCluster.config(proxiedUri(), sharding));
    ActorSystem b = cluster.start(TestCluster.config(core.uri(), sharding));
    cluster.awaitUp();
    TenureLog allocations = new TenureLog();
    Map<String, TenureLog> shards = new ConcurrentHashMap<>();
    for (int i = 0; i < 6; i++) {
      shards.put(String.valueOf(i), new TenureLog());
    }
    ActorRef regionA =
        ShardEntity.startSharding(a, shards, "A", new RecordingAllocation(a, allocations, "A"));
    ActorRef regionB =
        ShardEntity.startSharding(b, shards, "B", new RecordingAllocation(b, allocations, "B"));

    await("shards 0 and 1 run on A, 2 and 3 on B")
        .atMost(TestCluster.PATIENCE)
        .until(
            () -> {
              send(regionA, "0", "1");
              send(regionB, "2", "3");
              return acted(shards, "A", "0", "1") && acted(shards, "B", "2", "3");
            });

    cutAOffTheCore();
    cluster.partition(a);
    cluster.down(b, a);
    await("every shard runs on B, shards 0 and 1 moved")
        .atMost(TestCluster.PATIENCE)
        .until(
            () -> {
              send(regionA, "4"); // A's side keeps asking its own coordinator for a new shard
              send(regionB, "0", "1", "2", "3", "5");
              return acted(shards, "B", "0", "1", "2", "3", "5");
            });

    shards.forEach(
        (id, log) ->
            assertThat(log.violations()).as("shard %s, history:\n%s", id, log).isEmpty());
    // Coordinators start (the gate starts its strategy) and allocate each under its lease, tokens
    // never going back. A coordinator has no stop event here, so only starts and actions count.
    List<Long> tokens = allocations.events().stream().map(TenureLog.Event::token).toList();
    assertThat(tokens)
        .as("coordinator starts and allocations:\n%s", allocations)
        .allMatch(t -> t > 0)
        .isSorted();
    assertThat(allocations.startTokens("A")).hasSize(1);
    assertThat(allocations.startTokens("B")).hasSize(1);
    assertThat(allocations.count(TenureLog.Kind.ACT, "B")).isPositive();
  }

  private static void send(ActorRef region, String... shardIds) {
    for (String id : shardIds) {
      region.tell(id, ActorRef.noSender());
    }
  }

  private static boolean acted(Map<String, TenureLog> shards, String node, String... ids) {
    for (String id : ids) {
      if (shards.get(id).count(TenureLog.Kind.ACT, node) == 0) {
        return false;
      }
    }
    return true;
  }
}
