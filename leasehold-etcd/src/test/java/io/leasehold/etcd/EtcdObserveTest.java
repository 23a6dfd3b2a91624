package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.leasehold.Lease;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseSettings;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An observer on etcd whose connection is reset while the lease changes hands resumes its watch
 * from the revision after its last event and misses nothing; when etcd compacted that history
 * meanwhile, it is told GAP with the state read again.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdObserveTest {

  private static EtcdCluster cluster;
  private static Client admin;

  @BeforeAll
  static void startEtcd() {
    cluster = EtcdCluster.start(1);
    admin = Client.builder().endpoints(cluster.endpoint(0)).build();
  }

  @AfterAll
  static void stopEtcd() {
    if (admin != null) {
      admin.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void anObserverWhoseConnectionIsResetResumesFromItsRevisionAndMissesNothing() {
    List<String> seen = observeWhileHandedOver("resumed", false);
    assertThat(seen).containsExactly(
        "CURRENT free",
        "ACQUIRED owner-a " + tokens[0],
        "RELEASED owner-a " + tokens[0],
        "ACQUIRED owner-b " + tokens[1]);
  }

  @Test
  void anObserverWhoseHistoryWasCompactedMeanwhileIsToldGapWithTheStateReadAgain() {
    List<String> seen = observeWhileHandedOver("compacted", true);
    assertThat(seen).containsExactly("CURRENT free", "GAP owner-b " + tokens[1]);
  }

  private long[] tokens;

  /**
   * Observes {@code name} through a proxy; cuts the proxy, hands the lease from owner-a to owner-b
   * (optionally compacting etcd's history after that), resets the observer's connection, heals,
   * and returns what the observer was told once it caught up.
   */
  private List<String> observeWhileHandedOver(String name, boolean compact) {
    List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
    try (TcpProxy proxy = TcpProxy.start(cluster.clientAddress(0));
        EtcdBackend watcher = EtcdBackend.open("etcd://127.0.0.1:" + proxy.port());
        EtcdBackend holders = EtcdBackend.open(cluster.backendUri())) {
      watcher.observe(name, seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.newLease(settings(name, "owner-a"));
      Lease b = holders.newLease(settings(name, "owner-b"));

      // Cut: the watch stalls; then the connection is reset, so the observer must watch again
      // from the revision after its last event.
      proxy.blackhole();
      assertThat(a.acquire().join()).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      a.release().join();
      assertThat(b.acquire().join()).isTrue();
      tokens = new long[] {tokenOfA, b.fencingToken().orElseThrow()};
      if (compact) {
        long now = admin.getKVClient().get(EtcdLeaseStore.bytes("x")).join().getHeader().getRevision();
        admin.getKVClient().compact(now).join();
      }
      proxy.dropConnections();
      proxy.heal();

      String last = (compact ? "GAP" : "ACQUIRED") + " owner-b " + tokens[1];
      await().atMost(Duration.ofSeconds(60))
          .untilAsserted(() -> assertThat(summaries(seen)).as("what the observer was told").contains(last));
      return summaries(seen);
    }
  }

  private static List<String> summaries(List<LeaseEvent> seen) {
    return seen.stream()
        .map(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
        .toList();
  }

  /** A longer TTL than the contract suite's: the holders' acquires are not what is tested here. */
  private static LeaseSettings settings(String name, String owner) {
    return SuiteSettings.forTtl(name, owner, Duration.ofSeconds(10)).build();
  }
}
