package io.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plumbing of {@code compare} on made-up figures: medians and ranges over rounds, pooled
 * percentiles, the rotation of the stores' order, how kills are spread over rounds, and each
 * target's verdict with what it says about the miss; and one whole run on in-process stores.
 * Nothing here runs a real store or asserts a figure's size.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class CompareTest {

  private static final List<String> STORES = List.of("core", "etcd", "zookeeper");

  @Test
  void aSpreadIsTheMedianAndRangeOfTheRoundsLeavingOutUnmeasuredOnes() {
    assertThat(Spread.of(List.of(3.0, 1.0, 2.0))).isEqualTo(new Spread(2.0, 1.0, 3.0, 3));
    assertThat(Spread.of(List.of(4.0, 1.0, 3.0, 2.0))).isEqualTo(new Spread(2.5, 1.0, 4.0, 4));
    assertThat(Spread.of(List.of(Double.NaN, 5.0))).isEqualTo(new Spread(5.0, 5.0, 5.0, 1));
    assertThat(Spread.of(List.of())).isEqualTo(Spread.NONE);
    assertThat(Spread.of(List.of(Double.NaN))).isEqualTo(Spread.NONE);

    assertThat(Spread.of(List.of(3.0, 1.0, 2.0)).format("ms")).isEqualTo("2.00 (1.00..3.00)");
    assertThat(Spread.of(List.of(1_500.0, 1_200.0, 2_000.0)).format("/s")).isEqualTo("1,500 (1,200..2,000)");
    assertThat(Spread.of(List.of(7.0)).format("")).isEqualTo("7");
    assertThat(Spread.of(List.of(0.0, 0.0, 0.0)).format("")).as("no range when every round agrees").isEqualTo("0");
    assertThat(Spread.NONE.format("ms")).isEqualTo("n/a");
  }

  @Test
  void percentilesAreByNearestRankOverAllSamples() {
    List<Double> fifty = IntStream.rangeClosed(1, 50).mapToObj(i -> (double) i).toList();
    assertThat(Spread.percentile(fifty, 50)).isEqualTo(25.0);
    assertThat(Spread.percentile(fifty, 99)).as("with 50 samples p99 is the greatest").isEqualTo(50.0);
    assertThat(Spread.percentile(fifty, 100)).isEqualTo(50.0);
    List<Double> hundred = IntStream.rangeClosed(1, 100).mapToObj(i -> (double) i).toList();
    assertThat(Spread.percentile(hundred, 99)).isEqualTo(99.0);
    assertThat(Spread.percentile(List.of(3.0, Double.NaN, 1.0), 50)).isEqualTo(1.0);
    assertThat(Spread.percentile(List.of(), 99)).isNaN();
  }

  @Test
  void eachRoundRotatesTheOrderSoEveryStoreRunsInEveryPlaceOnce() {
    assertThat(Compare.order(STORES, 0)).containsExactly("core", "etcd", "zookeeper");
    assertThat(Compare.order(STORES, 1)).containsExactly("etcd", "zookeeper", "core");
    assertThat(Compare.order(STORES, 2)).containsExactly("zookeeper", "core", "etcd");
    assertThat(Compare.order(STORES, 3)).containsExactly("core", "etcd", "zookeeper");
    for (int place = 0; place < 3; place++) {
      Set<String> seen = new HashSet<>();
      for (int round = 0; round < 3; round++) {
        seen.add(Compare.order(STORES, round).get(place));
      }
      assertThat(seen).as("stores in place %d over 3 rounds", place).containsExactlyInAnyOrderElementsOf(STORES);
    }
    assertThat(Compare.order(List.of("etcd"), 5)).containsExactly("etcd");
  }

  @Test
  void killsAreSpreadEvenlyOverTheRounds() {
    assertThat(IntStream.range(0, 3).map(r -> Compare.killsInRound(50, 3, r))).containsExactly(17, 17, 16);
    assertThat(IntStream.range(0, 3).map(r -> Compare.killsInRound(1, 3, r))).containsExactly(1, 0, 0);
    assertThat(IntStream.range(0, 1).map(r -> Compare.killsInRound(2, 1, r))).containsExactly(2);
    assertThat(IntStream.range(0, 4).map(r -> Compare.killsInRound(0, 4, r))).containsExactly(0, 0, 0, 0);
  }

  @Test
  void theTableShowsMediansWithTheirRangesAndTheCoresRatiosOfMedians() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    double[] core = {100, 300, 200};
    double[] etcd = {100, 100, 100};
    double[] zk = {50, 60, 70};
    for (int round = 0; round < 3; round++) {
      o.run(round, "core", figures("acquire-release", "cycles_per_s", core[round]));
      o.run(round, "etcd", figures("acquire-release", "cycles_per_s", etcd[round]));
      o.run(round, "zookeeper", figures("acquire-release", "cycles_per_s", zk[round]));
    }
    ComparisonTable table = o.table();
    String line = table.render().lines().filter(l -> l.startsWith("acquire-release: cycles ")).findFirst().orElseThrow();
    assertThat(line).contains("200 (100..300)", " 100 ", "60 (50..70)", "2.00x", "3.33x");
    assertThat(table.render()).contains("order: round 1 core, etcd, zookeeper; round 2 etcd, zookeeper, core; round 3 zookeeper, core, etcd");
  }

  @Test
  void failoverPercentilesPoolEveryKillOfEveryRound() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    List<Double> all = new ArrayList<>();
    for (int round = 0; round < 3; round++) {
      List<Double> kills = new ArrayList<>();
      for (int k = 0; k < 17; k++) {
        double ms = 100 + round * 17 + k; // 100 .. 150
        kills.add(ms);
        all.add(ms);
      }
      o.run(round, "core", new Result("failover", "core").figure("kills", "", kills.size(), "").samples("next_acquire_ms", kills));
    }
    ComparisonTable table = o.table();
    ComparisonTable.Row p99 = ComparisonTable.ROWS.stream()
        .filter(r -> r.agg() == ComparisonTable.Agg.POOLED_P99).findFirst().orElseThrow();
    ComparisonTable.Row kills = ComparisonTable.ROWS.stream().filter(r -> r.key().equals("kills")).findFirst().orElseThrow();
    assertThat(table.value("core", p99)).isEqualTo(Spread.percentile(all, 99)).isEqualTo(150.0);
    assertThat(table.value("core", kills)).isEqualTo(51.0);
    CompareTargets.Verdict v = verdict(table, "failover");
    assertThat(v.verdict()).isEqualTo("met");
    assertThat(v.detail()).contains("p99 150.0 ms over 51 kills");
  }

  @Test
  void throughputIsMetAtOneAndAHalfTimesTheBetterStoreAndOtherwiseSaysHowShort() {
    Outcome met = new Outcome(Compare.Params.defaults(false));
    met.run(0, "core", figures("acquire-release", "cycles_per_s", 300));
    met.run(0, "etcd", figures("acquire-release", "cycles_per_s", 200));
    met.run(0, "zookeeper", figures("acquire-release", "cycles_per_s", 100));
    assertThat(verdict(met.table(), "acquire/release").verdict()).isEqualTo("met");

    Outcome missed = new Outcome(Compare.Params.defaults(false));
    missed.run(0, "core", figures("acquire-release", "cycles_per_s", 100));
    missed.run(0, "etcd", figures("acquire-release", "cycles_per_s", 100));
    missed.run(0, "zookeeper", figures("acquire-release", "cycles_per_s", 60));
    CompareTargets.Verdict v = verdict(missed.table(), "acquire/release");
    assertThat(v.verdict()).isEqualTo("MISSED");
    assertThat(v.detail()).contains("core 100/s", "etcd 100/s (core 1.00x)", "zookeeper 60/s (core 1.67x)",
        "needs 150/s", "short by 50/s (33% of what it needs)");

    CompareTargets.Verdict none = verdict(missed.table(), "contended handovers");
    assertThat(none.verdict()).isEqualTo("n/a");
  }

  @Test
  void lowLoadLatencyIsJudgedAgainstTheBetterStoreAndTheDisk() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    o.run(0, "core", figures("low-load", "acquire_p99_ms", 5));
    o.run(0, "etcd", figures("low-load", "acquire_p99_ms", 4));
    o.run(0, "zookeeper", figures("low-load", "acquire_p99_ms", 6));
    CompareTargets.Verdict v = CompareTargets.lowLoadLatency(o.table(), 0.5);
    assertThat(v.verdict()).isEqualTo("MISSED");
    assertThat(v.detail()).contains("over the better by 1.00 ms (1.25x)", "2 x the disk's fsync p99 is 1.00 ms: core's p99 is 5.0x that (4.00 ms above)");
    o.run(1, "core", figures("low-load", "acquire_p99_ms", 3));
    o.run(2, "core", figures("low-load", "acquire_p99_ms", 4));
    assertThat(CompareTargets.lowLoadLatency(o.table(), 0.5).verdict()).as("the median, 4 ms, equals etcd's").isEqualTo("met");
  }

  @Test
  void holdNeedsTheRenewalsTheLeasesAndNoLossInAnyRoundAndIsNotJudgedOnFewerLeases() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    double[] losses = {0, 2, 0};
    for (int round = 0; round < 3; round++) {
      o.run(round, "core", new Result("hold", "core")
          .figure("held", "", 100_000, "").figure("renewals_per_s", "", 60_000, "/s").figure("spurious_losses", "", losses[round], "")
          .figure("flood_renewals_per_s", "", 40_000, "/s").figure("flood_spurious_losses", "", 0, "").figure("flood_cycles_per_s", "", 500, "/s"));
    }
    ComparisonTable table = o.table();
    CompareTargets.Verdict quiet = verdict(table, ">= 50,000 renewals/s");
    assertThat(quiet.verdict()).isEqualTo("MISSED");
    assertThat(quiet.detail()).contains("60,000 renewals/s with 100,000 leases held, 2 spurious losses", "2 spurious losses in a round");
    CompareTargets.Verdict flood = verdict(table, "write flood");
    assertThat(flood.verdict()).isEqualTo("MISSED");
    assertThat(flood.detail()).contains("40,000 renewals/s", "the flood at 500 cycles/s", "short by 10,000 renewals/s (20%)");

    Outcome quick = new Outcome(Compare.Params.defaults(true));
    quick.run(0, "core", new Result("hold", "core").figure("held", "", 10_000, "").figure("renewals_per_s", "", 6_000, "/s")
        .figure("spurious_losses", "", 0, ""));
    CompareTargets.Verdict small = verdict(quick.table(), ">= 50,000 renewals/s");
    assertThat(small.verdict()).isEqualTo("n/a");
    assertThat(small.detail()).contains("this run held 10,000 leases (--leases), the target speaks of 100,000");
  }

  @Test
  void failoverNeedsFiftyKillsBeforeItIsJudged() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    o.run(0, "core", new Result("failover", "core").samples("next_acquire_ms", List.of(900.0, 1_400.0)));
    CompareTargets.Verdict few = verdict(o.table(), "failover");
    assertThat(few.verdict()).isEqualTo("n/a");
    assertThat(few.detail()).contains("over 2 kills", "too few kills");

    Outcome many = new Outcome(Compare.Params.defaults(false));
    List<Double> kills = new ArrayList<>(IntStream.range(0, 49).mapToObj(i -> 500.0).toList());
    kills.add(1_250.0);
    many.run(0, "core", new Result("failover", "core").samples("next_acquire_ms", kills));
    CompareTargets.Verdict v = verdict(many.table(), "failover");
    assertThat(v.verdict()).isEqualTo("MISSED");
    assertThat(v.detail()).contains("p99 1,250 ms over 50 kills", "over by 250.0 ms (1.25x)");
  }

  @Test
  void theStormMustDrainInFiveSecondsPastTheTtlWithAShortStall() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    o.run(0, "core", storm(100_000, 1.5, 120, 0));
    assertThat(verdict(o.table(), "expire-storm").verdict()).isEqualTo("met");

    Outcome late = new Outcome(Compare.Params.defaults(false));
    late.run(0, "core", storm(100_000, 7.25, 900, 3));
    CompareTargets.Verdict v = verdict(late.table(), "expire-storm");
    assertThat(v.verdict()).isEqualTo("MISSED");
    assertThat(v.detail()).contains("drained 2.25 s too late", "stall over by 600.0 ms", "3 trickle acquires failed in a round");

    Outcome drainedNever = new Outcome(Compare.Params.defaults(false));
    drainedNever.run(0, "core", storm(100_000, Double.NaN, 100, 0));
    assertThat(verdict(drainedNever.table(), "expire-storm").detail()).contains("not all were gone within the drain timeout");

    Outcome quick = new Outcome(Compare.Params.defaults(true));
    quick.run(0, "core", storm(5_000, 1, 100, 0));
    assertThat(verdict(quick.table(), "expire-storm").verdict()).isEqualTo("n/a");
  }

  @Test
  void theCoresMemoryPerLeaseMustNotExceedEtcds() {
    CompareTargets.Verdict v = rssVerdict(Compare.Params.defaults(false), true);
    assertThat(v.verdict()).isEqualTo("MISSED");
    assertThat(v.detail()).contains("core 8,000 B, etcd 3,000 B (core 2.67x)", "over by 5,000 B per lease");
    assertThat(rssVerdict(Compare.Params.defaults(false), false).verdict()).as("core alone").isEqualTo("n/a");
    // Too few leases for a figure per lease (--quick holds 10,000; a run may hold 1): not judged.
    CompareTargets.Verdict few = rssVerdict(Compare.Params.defaults(true), true);
    assertThat(few.verdict()).isEqualTo("n/a");
    assertThat(few.detail()).contains("this run held 10,000 leases", "judged at 100,000");
  }

  /** The RSS verdict of a run where the core's servers used 8,000 B per lease (and etcd's 3,000, if it ran). */
  private static CompareTargets.Verdict rssVerdict(Compare.Params params, boolean withEtcd) {
    Outcome o = new Outcome(params);
    o.run(0, "core", figures("hold", "server_rss_per_lease_bytes", 8_000));
    if (withEtcd) {
      o.run(0, "etcd", figures("hold", "server_rss_per_lease_bytes", 3_000));
    }
    return verdict(o.table(), "RSS");
  }

  @Test
  void everyTargetOfTheIssueIsJudged() {
    List<CompareTargets.Verdict> all = new Outcome(Compare.Params.defaults(false)).table().targets();
    assertThat(all).extracting(CompareTargets.Verdict::target).hasSize(8)
        .anyMatch(t -> t.contains("acquire/release")).anyMatch(t -> t.contains("contended"))
        .anyMatch(t -> t.contains("low-load")).anyMatch(t -> t.contains("renewals/s"))
        .anyMatch(t -> t.contains("write flood")).anyMatch(t -> t.contains("failover"))
        .anyMatch(t -> t.contains("expire-storm")).anyMatch(t -> t.contains("RSS"));
    assertThat(all).extracting(CompareTargets.Verdict::verdict).containsOnly("n/a");
  }

  @Test
  void aRunGoesThroughEveryStoreInEveryRoundInTheRotatedOrderAndSurvivesAFailedWorkload(@TempDir Path dir) throws Exception {
    Compare.Params d = Compare.Params.defaults(true);
    Duration shortly = Duration.ofMillis(300);
    Compare.Params p = new Compare.Params(List.of("a", "b"), 2, shortly, Duration.ZERO, shortly, shortly, 2, 2,
        Duration.ofSeconds(5), 50, Duration.ofSeconds(2), shortly, 2, Duration.ofSeconds(30), 0, 0, d.stormTtl(), 4, 5, dir);
    AtomicInteger opened = new AtomicInteger();
    Map<String, ClientFactory> stores = Map.of("a", ClientFactory.forUri("memory:"), "b", ClientFactory.forUri("memory:"));
    List<String> started = new ArrayList<>();
    StringWriter progress = new StringWriter();
    Compare.Outcome outcome = new Compare(p, (store, parent) -> {
      started.add(store);
      assertThat(parent).isEqualTo(dir);
      ClientFactory memory = stores.get(store);
      // Store a's 5th backend, its first run's low-load client (after the two warm-ups' 2 + 2), fails.
      return Target.ofClients(store, () -> {
        if (store.equals("a") && opened.incrementAndGet() == 5) {
          throw new IllegalStateException("no backend today");
        }
        return memory.open();
      });
    }, new PrintWriter(progress)).run();

    assertThat(started).containsExactly("a", "b", "b", "a");
    assertThat(outcome.runs()).extracting(Compare.Run::round).containsExactly(1, 1, 2, 2);
    assertThat(outcome.runs()).extracting(Compare.Run::position).containsExactly(1, 2, 1, 2);
    Compare.Run failed = outcome.runs().get(0);
    assertThat(failed.failure()).startsWith("low-load: java.lang.IllegalStateException: no backend today");
    assertThat(failed.results()).extracting(Result::workload).containsExactly("warm-up", "acquire-release", "contended", "hold");
    assertThat(outcome.runs().get(3).results()).extracting(Result::workload)
        .containsExactly("warm-up", "low-load", "acquire-release", "contended", "hold");
    assertThat(outcome.failures()).containsExactly("a, round 1: low-load: java.lang.IllegalStateException: no backend today");
    assertThat(outcome.fsync().value("fsync_p99_ms")).isNotNaN();
    assertThat(outcome.environment()).containsEntry("data_dir", dir.toString()).containsKeys("server_jvm_options", "load_average_start");
    assertThat(new ComparisonTable(outcome).render()).contains("failed: a, round 1: low-load");
    assertThat(progress.toString()).contains("round 2 of 2: b, a");
  }

  // ---- helpers ----

  private static Result figures(String workload, String key, double value) {
    return new Result(workload, "x").figure(key, key, value, "");
  }

  private static Result storm(double held, double afterTtl, double stallMax, double failed) {
    return new Result("expire-storm", "core").figure("held", "", held, "").figure("all_gone_after_ttl_s", "", afterTtl, "s")
        .figure("stall_max_ms", "", stallMax, "ms").figure("stall_failed", "", failed, "");
  }

  private static CompareTargets.Verdict verdict(ComparisonTable table, String targetContains) {
    return table.targets().stream().filter(v -> v.target().contains(targetContains)).findFirst().orElseThrow();
  }

  /** Builds an outcome run by run; results of one store in one round are merged. */
  private static final class Outcome {
    private final Compare.Params params;
    private final List<Compare.Run> runs = new ArrayList<>();

    Outcome(Compare.Params params) {
      this.params = params;
    }

    void run(int round, String store, Result result) {
      for (int i = 0; i < runs.size(); i++) {
        Compare.Run r = runs.get(i);
        if (r.round() == round + 1 && r.store().equals(store)) {
          List<Result> results = new ArrayList<>(r.results());
          results.add(result);
          runs.set(i, new Compare.Run(r.round(), r.position(), store, 0, results, null));
          return;
        }
      }
      runs.add(new Compare.Run(round + 1, Compare.order(STORES, round).indexOf(store) + 1, store, 0, List.of(result), null));
    }

    ComparisonTable table() {
      Result fsync = new Result("fsync", "x").figure("fsync_p50_ms", "", 0.3, "ms").figure("fsync_p99_ms", "", 0.5, "ms");
      return new ComparisonTable(new Compare.Outcome(params, fsync, runs, Map.of(), Map.of()));
    }
  }

  @Test
  void aStoreWithoutRunsHasNoColumn() {
    Outcome o = new Outcome(Compare.Params.defaults(false));
    o.run(0, "etcd", figures("acquire-release", "cycles_per_s", 100));
    String header = o.table().render().lines().filter(l -> l.startsWith("figure")).findFirst().orElseThrow();
    assertThat(header).contains("etcd").doesNotContain("core/").doesNotContain("zookeeper");
    assertThat(o.table().value("etcd", ComparisonTable.ROWS.get(4))).isCloseTo(100, within(1e-9));
  }
}
