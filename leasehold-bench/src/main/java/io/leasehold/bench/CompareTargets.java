package io.leasehold.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The core's performance targets (BENCHMARKS.md), each judged on the figures of a compare run: met, {@code MISSED}
 * by how much, or {@code n/a} when the run did not measure what the target speaks of (a store left
 * out, fewer leases or kills than the target names). Every target reads the median over the
 * rounds, except spurious losses, which must be 0 in every round (the greatest is read), and the
 * failover's p99, which pools every kill of every round.
 */
final class CompareTargets {

  /** The core must do at least this many times the better of etcd and ZooKeeper, in throughput. */
  static final double THROUGHPUT_FACTOR = 1.5;
  static final double RENEWALS_TARGET = 50_000;
  static final int TARGET_LEASES = 100_000;
  static final double FAILOVER_P99_MS = 1_000;
  static final int FAILOVER_MIN_KILLS = 50;
  static final double STORM_DRAIN_S = 5;
  /** "A few hundred milliseconds" of acquire stall while the storm drains. */
  static final double STORM_STALL_MS = 300;

  /** What the targets read. */
  interface Figures {
    /** {@return the figure over the rounds of {@code store}} */
    Spread spread(String store, String workload, String key);

    /** {@return the single measurements kept under {@code key}, over every round of {@code store}} */
    List<Double> samples(String store, String workload, String key);
  }

  /**
   * One target's verdict.
   *
   * @param target what the core must reach
   * @param verdict {@code met}, {@code MISSED} or {@code n/a}
   * @param detail the figures behind it and, when missed, by how much
   */
  record Verdict(String target, String verdict, String detail) {}

  private CompareTargets() {}

  /** {@return every target's verdict, in the order} */
  static List<Verdict> evaluate(Figures f, Compare.Params params, double fsyncP99Ms) {
    List<Verdict> out = new ArrayList<>();
    out.add(faster(f, "acquire/release cycles/s >= 1.5x etcd's and >= 1.5x ZooKeeper's", "acquire-release", "cycles_per_s", "/s"));
    out.add(faster(f, "contended handovers/s >= 1.5x etcd's and >= 1.5x ZooKeeper's", "contended", "handovers_per_s", "/s"));
    out.add(lowLoadLatency(f, fsyncP99Ms));
    out.add(hold(f, params, "", ">= 50,000 renewals/s with 100,000 held leases, 0 spurious losses"));
    out.add(hold(f, params, "flood_", "the same while a write flood saturates the store"));
    out.add(failover(f));
    out.add(storm(f, params));
    out.add(memory(f, params));
    return out;
  }

  private static double median(Figures f, String store, String workload, String key) {
    return f.spread(store, workload, key).median();
  }

  /** core >= THROUGHPUT_FACTOR x each of etcd and ZooKeeper that was measured. */
  static Verdict faster(Figures f, String target, String workload, String key, String unit) {
    double core = median(f, "core", workload, key);
    double etcd = median(f, "etcd", workload, key);
    double zk = median(f, "zookeeper", workload, key);
    if (Double.isNaN(core) || (Double.isNaN(etcd) && Double.isNaN(zk))) {
      return new Verdict(target, "n/a", "not measured (needs core and at least one of etcd, zookeeper)");
    }
    double best = Math.max(Double.isNaN(etcd) ? 0 : etcd, Double.isNaN(zk) ? 0 : zk);
    double need = THROUGHPUT_FACTOR * best;
    String detail = String.format(Locale.ROOT, "core %s%s, etcd %s (core %s), zookeeper %s (core %s); needs %s%s",
        Figure.format(core, unit), unit, show(etcd, unit), ComparisonTable.ratio(core, etcd), show(zk, unit),
        ComparisonTable.ratio(core, zk), Figure.format(need, unit), unit);
    if (core >= need) {
      return new Verdict(target, "met", detail);
    }
    return new Verdict(target, "MISSED", detail + String.format(Locale.ROOT, "; short by %s%s (%.0f%% of what it needs)",
        Figure.format(need - core, unit), unit, 100 * (need - core) / need));
  }

  private static String show(double v, String unit) {
    return Double.isNaN(v) ? "not measured" : Figure.format(v, unit) + unit;
  }

  /** core's low-load p99 <= the better of etcd's and ZooKeeper's; and how far from 2 x fsync p99. */
  static Verdict lowLoadLatency(Figures f, double fsyncP99Ms) {
    String target = "low-load acquire p99 <= the better of etcd's and ZooKeeper's";
    double core = median(f, "core", "low-load", "acquire_p99_ms");
    double etcd = median(f, "etcd", "low-load", "acquire_p99_ms");
    double zk = median(f, "zookeeper", "low-load", "acquire_p99_ms");
    if (Double.isNaN(core) || (Double.isNaN(etcd) && Double.isNaN(zk))) {
      return new Verdict(target, "n/a", "not measured (needs core and at least one of etcd, zookeeper)");
    }
    double best = Math.min(Double.isNaN(etcd) ? Double.MAX_VALUE : etcd, Double.isNaN(zk) ? Double.MAX_VALUE : zk);
    StringBuilder detail = new StringBuilder(String.format(Locale.ROOT, "core %s ms, etcd %s, zookeeper %s",
        Figure.format(core, "ms"), show(etcd, " ms"), show(zk, " ms")));
    boolean met = core <= best;
    if (!met) {
      detail.append(String.format(Locale.ROOT, "; over the better by %s ms (%.2fx)", Figure.format(core - best, "ms"), core / best));
    }
    if (!Double.isNaN(fsyncP99Ms) && fsyncP99Ms > 0) {
      double bound = 2 * fsyncP99Ms;
      detail.append(String.format(Locale.ROOT, "; 2 x the disk's fsync p99 is %s ms: core's p99 is %.1fx that (%s ms %s)",
          Figure.format(bound, "ms"), core / bound, Figure.format(Math.abs(core - bound), "ms"), core > bound ? "above" : "below"));
    }
    return new Verdict(target, met ? "met" : "MISSED", detail.toString());
  }

  /** The hold target, quiet ({@code prefix} "") or under the flood ({@code "flood_"}). */
  static Verdict hold(Figures f, Compare.Params params, String prefix, String target) {
    double renewals = median(f, "core", "hold", prefix + "renewals_per_s");
    double held = median(f, "core", "hold", "held");
    double losses = f.spread("core", "hold", prefix + "spurious_losses").max();
    if (Double.isNaN(renewals)) {
      return new Verdict(target, "n/a", "not measured");
    }
    StringBuilder detail = new StringBuilder(String.format(Locale.ROOT, "%s renewals/s with %s leases held, %s spurious losses",
        Figure.format(renewals, "/s"), Figure.format(held, ""), Figure.format(losses, "")));
    if (!prefix.isEmpty()) {
      double cycles = median(f, "core", "hold", "flood_cycles_per_s");
      detail.append(", the flood at ").append(Figure.format(cycles, "/s")).append(" cycles/s");
    }
    if (params.leases() < TARGET_LEASES) {
      return new Verdict(target, "n/a", detail + String.format(Locale.ROOT,
          "; this run held %,d leases (--leases), the target speaks of %,d", params.leases(), TARGET_LEASES));
    }
    List<String> misses = new ArrayList<>();
    if (renewals < RENEWALS_TARGET) {
      misses.add(String.format(Locale.ROOT, "short by %s renewals/s (%.0f%%)",
          Figure.format(RENEWALS_TARGET - renewals, "/s"), 100 * (RENEWALS_TARGET - renewals) / RENEWALS_TARGET));
    }
    if (held < TARGET_LEASES) {
      misses.add(String.format(Locale.ROOT, "%s leases fewer than %,d held", Figure.format(TARGET_LEASES - held, ""), TARGET_LEASES));
    }
    if (losses > 0) {
      misses.add(Figure.format(losses, "") + " spurious losses in a round");
    }
    return misses.isEmpty()
        ? new Verdict(target, "met", detail.toString())
        : new Verdict(target, "MISSED", detail + "; " + String.join(", ", misses));
  }

  /** kill leader -> next acquire p99 <= 1 s, pooled over >= 50 kills. */
  static Verdict failover(Figures f) {
    String target = "failover: kill leader -> next acquire p99 <= 1 s over >= 50 kills";
    List<Double> samples = f.samples("core", "failover", "next_acquire_ms");
    if (samples.isEmpty()) {
      return new Verdict(target, "n/a", "not measured (--kills 0, or no kill recovered)");
    }
    double p99 = Spread.percentile(samples, 99);
    String detail = String.format(Locale.ROOT, "p99 %s ms over %d kills (p50 %s ms, max %s ms)",
        Figure.format(p99, "ms"), samples.size(), Figure.format(Spread.percentile(samples, 50), "ms"),
        Figure.format(Spread.percentile(samples, 100), "ms"));
    if (samples.size() < FAILOVER_MIN_KILLS) {
      return new Verdict(target, "n/a", detail + "; too few kills for the target (--kills " + FAILOVER_MIN_KILLS + " or more)");
    }
    if (p99 <= FAILOVER_P99_MS) {
      return new Verdict(target, "met", detail);
    }
    return new Verdict(target, "MISSED", detail + String.format(Locale.ROOT, "; over by %s ms (%.2fx)",
        Figure.format(p99 - FAILOVER_P99_MS, "ms"), p99 / FAILOVER_P99_MS));
  }

  /** 100,000 leases expiring at once all gone <= 5 s after kill + TTL, trickle acquire stall <= 300 ms. */
  static Verdict storm(Figures f, Compare.Params params) {
    String target = String.format(Locale.ROOT, "expire-storm: %,d leases all gone <= %.0f s after kill + TTL, acquire stall <= %.0f ms",
        TARGET_LEASES, STORM_DRAIN_S, STORM_STALL_MS);
    double after = median(f, "core", "expire-storm", "all_gone_after_ttl_s");
    double stall = median(f, "core", "expire-storm", "stall_max_ms");
    double failed = f.spread("core", "expire-storm", "stall_failed").max();
    double held = median(f, "core", "expire-storm", "held");
    if (Double.isNaN(held)) {
      return new Verdict(target, "n/a", "not measured (--storm-leases 0, or the run stopped early)");
    }
    String detail = String.format(Locale.ROOT, "%s leases: all gone %s s after kill + TTL, stall (trickle acquire max) %s ms, %s trickle acquires failed",
        Figure.format(held, ""), Figure.format(after, "s"), Figure.format(stall, "ms"), Figure.format(failed, ""));
    if (params.stormLeases() < TARGET_LEASES) {
      return new Verdict(target, "n/a", detail + String.format(Locale.ROOT,
          "; this run expired %,d leases (--storm-leases), the target speaks of %,d", params.stormLeases(), TARGET_LEASES));
    }
    List<String> misses = new ArrayList<>();
    if (Double.isNaN(after)) {
      misses.add("not all were gone within the drain timeout");
    } else if (after > STORM_DRAIN_S) {
      misses.add(String.format(Locale.ROOT, "drained %s s too late", Figure.format(after - STORM_DRAIN_S, "s")));
    }
    if (Double.isNaN(stall) || stall > STORM_STALL_MS) {
      misses.add(Double.isNaN(stall) ? "no trickle acquire answered"
          : String.format(Locale.ROOT, "stall over by %s ms", Figure.format(stall - STORM_STALL_MS, "ms")));
    }
    if (failed > 0) {
      misses.add(Figure.format(failed, "") + " trickle acquires failed in a round");
    }
    if (held < TARGET_LEASES) {
      misses.add(String.format(Locale.ROOT, "%s leases fewer than %,d held", Figure.format(TARGET_LEASES - held, ""), TARGET_LEASES));
    }
    return misses.isEmpty() ? new Verdict(target, "met", detail) : new Verdict(target, "MISSED", detail + "; " + String.join(", ", misses));
  }

  /**
   * core's server RSS per held lease <= etcd's. Judged only with the target's number of leases: the
   * figure is the servers' RSS growth divided by the leases held, which with a few leases is page
   * and heap noise divided by a small number (a run holding 1 lease read "20x").
   */
  static Verdict memory(Figures f, Compare.Params params) {
    String target = "server RSS per held lease <= etcd's";
    double core = median(f, "core", "hold", "server_rss_per_lease_bytes");
    double etcd = median(f, "etcd", "hold", "server_rss_per_lease_bytes");
    if (Double.isNaN(core) || Double.isNaN(etcd)) {
      return new Verdict(target, "n/a", "not measured (needs core and etcd)");
    }
    String detail = String.format(Locale.ROOT, "core %s B, etcd %s B (core %s), over 3 members each",
        Figure.format(core, "B"), Figure.format(etcd, "B"), ComparisonTable.ratio(core, etcd));
    if (params.leases() < TARGET_LEASES) {
      return new Verdict(target, "n/a", detail + String.format(Locale.ROOT,
          "; this run held %,d leases (--leases): too few for a figure per lease, the target is judged at %,d",
          params.leases(), TARGET_LEASES));
    }
    return core <= etcd
        ? new Verdict(target, "met", detail)
        : new Verdict(target, "MISSED", detail + "; over by " + Figure.format(core - etcd, "B") + " B per lease");
  }
}
