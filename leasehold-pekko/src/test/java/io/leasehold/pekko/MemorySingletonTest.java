package io.leasehold.pekko;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.cluster.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pekko's own Cluster Singleton, with {@code use-lease} pointing at Leasehold, on two actor
 * systems in this JVM sharing one in-memory store. Each node reaches the store through its own
 * connection, which the tests cut off or freeze; the cluster itself is split with Artery's test
 * black hole and the lease holder downed from the other side — the split brain a lease exists
 * for. The singleton writes what it does to a {@link TenureLog}, whose checker must find nothing.
 */
@Timeout(90)
class MemorySingletonTest {

  private final MemoryStore store = MemoryStore.create();
  private final TenureLog log = new TenureLog();
  private final TestCluster cluster = new TestCluster("memory-singleton");

  @AfterEach
  void stop() {
    cluster.close();
  }

  /** One node whose leases go through its own connection to the shared store. */
  private record Node(String name, ActorSystem system, AtomicReference<MemoryBackend> backend) {}

  private Node node(String name, String extraConfig) {
    AtomicReference<MemoryBackend> backend = new AtomicReference<>();
    ActorSystem system =
        cluster.start(
            TestCluster.config("memory:", extraConfig),
            LeaseholdSetup.create(
                uri -> {
                  MemoryBackend b = store.connect();
                  backend.set(b);
                  return b;
                }));
    return new Node(name, system, backend);
  }

  private Node[] twoNodesWithTheSingletonOnA(String extraConfig) {
    Node a = node("A", extraConfig);
    Node b = node("B", extraConfig);
    cluster.awaitUp();
    SingletonWorker.startManager(a.system(), log, a.name());
    SingletonWorker.startManager(b.system(), log, b.name());
    await("the singleton started on A")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "A") > 0);
    return new Node[] {a, b};
  }

  @Test
  void whenTheHolderIsCutOffTheSingletonStopsThereBeforeItStartsElsewhere() {
    Node[] nodes = twoNodesWithTheSingletonOnA("");
    Node a = nodes[0], b = nodes[1];

    a.backend().get().cutOff(); // A can no longer renew: its lease runs out
    cluster.partition(a.system()); // and B can no longer see A
    cluster.down(b.system(), a.system()); // so B downs A and becomes the oldest node

    await("the singleton started on B")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "B") > 5);
    assertThat(log.violations()).as("history:\n%s", log).isEmpty();
    assertThat(log.count(TenureLog.Kind.STOP, "A")).as("A's singleton stopped").isEqualTo(1);
    assertThat(log.startTokens("B").get(0)).isGreaterThan(log.startTokens("A").get(0));
  }

  /**
   * The lease engine of the holder is frozen — its renewal and callback threads get no CPU, as
   * under starvation — while its actors keep running. No renewal, no {@code onLost}: only {@code
   * checkLease()} comparing the clock with the safe deadline itself stops the singleton's work.
   * (A {@code checkLease()} answering from a flag that the loss callback clears keeps saying yes
   * here, and the checker sees A act after B started.)
   */
  @Test
  void aHolderWhoseLeaseThreadsAreStarvedStopsActingAtItsSafeDeadline() {
    Node[] nodes = twoNodesWithTheSingletonOnA("");
    Node a = nodes[0], b = nodes[1];

    a.backend().get().pause();
    try {
      cluster.partition(a.system());
      cluster.down(b.system(), a.system());

      // B gets the lease once the store's TTL has run out; while B works, a stale A would too.
      await("the singleton worked on B")
          .atMost(TestCluster.PATIENCE)
          .until(() -> log.count(TenureLog.Kind.ACT, "B") > 25);
      assertThat(log.violations()).as("history:\n%s", log).isEmpty();
      assertThat(log.count(TenureLog.Kind.STOP, "A"))
          .as("A's singleton stopped itself on checkLease() = false, with no onLost yet")
          .isEqualTo(1);
    } finally {
      a.backend().get().resume();
    }
  }

  /**
   * A node that leaves hands the singleton over: its singleton stops, Cluster Singleton releases
   * the lease and the next node acquires it at once. The TTL here is a minute, so B starting
   * within the test's patience proves the lease was released, not left to expire.
   */
  @Test
  void aLeavingNodeReleasesTheLeaseAndTheSingletonMovesWithAGreaterToken() {
    Node[] nodes =
        twoNodesWithTheSingletonOnA(
            "leasehold.pekko.lease { heartbeat-timeout = 60s, heartbeat-interval = 5s }");
    Node a = nodes[0], b = nodes[1];

    Cluster.get(a.system()).leave(TestCluster.address(a.system()));

    await("the singleton started on B")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "B") > 0);
    assertThat(log.violations()).as("history:\n%s", log).isEmpty();
    assertThat(log.startTokens("B").get(0)).isGreaterThan(log.startTokens("A").get(0));
    assertThat(b.backend().get()).isNotNull();
  }
}
