package io.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.bench.cluster.ManagedClusters;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * expire-storm on each real store, small: holder processes acquire leases and are killed together,
 * and the store's own count shows them gone, while the trickle's acquires are answered. No figure's
 * size is asserted, only that each was measured and that the events came in their order.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ExpireStormTest {

  static {
    BenchMain.quietLogs();
  }

  @TempDir Path temp;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"core", "etcd", "zookeeper"})
  void killedHoldersLeasesAreCountedGoneWhileTheTrickleIsAnswered(String kind) throws Exception {
    try (ManagedCluster cluster = ManagedClusters.start(kind, temp.resolve(kind))) {
      Result r = new ExpireStorm(cluster, ClientFactory.forUri(cluster.backendUri()), kind,
          // The least leases per holder, TTL 10 s (operations time out after TTL / 6) and 4 acquires in
          // flight per holder: a fresh JVM on two busy cores must not be buried in its own timeouts.
          new ExpireStorm.Params(2 * ExpireStorm.MIN_LEASES_PER_HOLDER, 2, Duration.ofSeconds(10), 4, Duration.ofMinutes(2),
              Duration.ofMillis(20), Duration.ofSeconds(1), Duration.ofSeconds(60))).run();
      // A busy machine can make an acquire fail (it is counted); none may go missing.
      assertThat(r.value("held") + r.value("setup_failed")).isEqualTo(2 * ExpireStorm.MIN_LEASES_PER_HOLDER);
      assertThat(r.value("held")).isPositive();
      assertThat(r.value("store_count_at_kill")).isPositive();
      assertThat(r.value("first_gone_s")).isNotNaN().isNotNegative();
      assertThat(r.value("all_gone_s")).isNotNaN().isGreaterThanOrEqualTo(r.value("first_gone_s"));
      assertThat(r.value("stall_count")).isPositive();
      assertThat(r.value("trickle_before_count")).isPositive();
      assertThat(r.value("trickle_unanswered")).isZero();
      assertThat(cluster.heldLeases()).hasValue(0);
      assertThat(r.toTable()).contains("kill -> all storm leases gone", "trickle acquire from the kill");
    }
  }

  @Test
  void zooKeeperHoldersAskForASessionTimeoutOfTheTtl() {
    assertThat(ExpireStorm.holderUri("zookeeper://127.0.0.1:1,127.0.0.1:2?sessionTimeout=30s", Duration.ofSeconds(5)))
        .isEqualTo("zookeeper://127.0.0.1:1,127.0.0.1:2?sessionTimeout=5000ms");
    assertThat(ExpireStorm.holderUri("zookeeper://127.0.0.1:1/chroot", Duration.ofSeconds(4)))
        .isEqualTo("zookeeper://127.0.0.1:1/chroot?sessionTimeout=4000ms");
    assertThat(ExpireStorm.holderUri("etcd://127.0.0.1:1", Duration.ofSeconds(5))).isEqualTo("etcd://127.0.0.1:1");
  }
}
