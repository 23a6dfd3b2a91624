package io.leasehold.bench;

import io.leasehold.cli.Durations;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The one table of a compare run: a row per figure, a column per store, each cell the median over
 * the rounds with the range (min..max) beside it, and the core's ratio to etcd and to ZooKeeper
 * (of the medians); then the targets the core must meet ({@link CompareTargets}), each met or
 * missed by how much.
 */
final class ComparisonTable implements CompareTargets.Figures {

  /** How a row's cell is made from the rounds. */
  enum Agg {
    /** the median of the rounds' values, with their range */
    MEDIAN,
    /** the rounds' values added up (counts of events, such as kills) */
    SUM,
    /** percentiles of the single measurements of every round together ({@link Result#samples}) */
    POOLED_P50,
    POOLED_P99,
    POOLED_MAX
  }

  /** A row: a figure of a workload ({@code key} names the samples for a pooled row). */
  record Row(String workload, String key, String label, String unit, Agg agg) {}

  private static Row median(String workload, String key, String label, String unit) {
    return new Row(workload, key, label, unit, Agg.MEDIAN);
  }

  static final List<Row> ROWS = List.of(
      median("low-load", "acquire_p50_ms", "low load (1 client, 1 in flight): acquire p50", "ms"),
      median("low-load", "acquire_p99_ms", "low load: acquire p99", "ms"),
      median("low-load", "client_cpu_us_per_op", "low load: client CPU per cycle", "us"),
      median("low-load", "server_cpu_us_per_op", "low load: server CPU per cycle (3 members)", "us"),
      median("acquire-release", "cycles_per_s", "acquire-release: cycles", "/s"),
      median("acquire-release", "acquire_p50_ms", "acquire-release: acquire p50", "ms"),
      median("acquire-release", "acquire_p99_ms", "acquire-release: acquire p99", "ms"),
      median("acquire-release", "acquire_p999_ms", "acquire-release: acquire p99.9", "ms"),
      median("acquire-release", "release_p99_ms", "acquire-release: release p99", "ms"),
      median("acquire-release", "client_cpu_us_per_op", "acquire-release: client CPU per cycle", "us"),
      median("acquire-release", "server_cpu_us_per_op", "acquire-release: server CPU per cycle (3 members)", "us"),
      median("acquire-release", "client_cpu_cores", "acquire-release: client CPU", "cores"),
      median("acquire-release", "server_cpu_cores", "acquire-release: server CPU (3 members)", "cores"),
      median("acquire-release", "errors", "acquire-release: errors", ""),
      median("contended", "handovers_per_s", "contended: handovers", "/s"),
      median("contended", "handover_gap_p50_ms", "contended: release -> next acquire p50", "ms"),
      median("contended", "handover_gap_p99_ms", "contended: release -> next acquire p99", "ms"),
      median("contended", "client_cpu_us_per_op", "contended: client CPU per handover", "us"),
      median("contended", "server_cpu_us_per_op", "contended: server CPU per handover (3 members)", "us"),
      median("contended", "token_regressions", "contended: fencing tokens not increasing (must be 0)", ""),
      median("contended", "errors", "contended: errors", ""),
      new Row("failover", "kills", "failover: leader kills (all rounds)", "", Agg.SUM),
      new Row("failover", "next_acquire_ms", "failover: kill leader -> next acquire p50 (all kills)", "ms", Agg.POOLED_P50),
      new Row("failover", "next_acquire_ms", "failover: kill leader -> next acquire p99 (all kills)", "ms", Agg.POOLED_P99),
      new Row("failover", "next_acquire_ms", "failover: kill leader -> next acquire max (all kills)", "ms", Agg.POOLED_MAX),
      new Row("failover", "lease_held_through", "failover: lease held through the kill (all rounds)", "", Agg.SUM),
      new Row("failover", "lease_lost", "failover: lease lost in the kill (all rounds)", "", Agg.SUM),
      median("failover", "lease_renewed_p50_ms", "failover: held through: kill -> renewal confirmed p50", "ms"),
      median("expire-storm", "held", "expire-storm: leases that expire at once", ""),
      median("expire-storm", "first_gone_s", "expire-storm: kill -> first gone", "s"),
      median("expire-storm", "all_gone_s", "expire-storm: kill -> all gone", "s"),
      median("expire-storm", "all_gone_after_ttl_s", "expire-storm: all gone, after kill + TTL", "s"),
      median("expire-storm", "drain_s", "expire-storm: drain (first gone -> all gone)", "s"),
      median("expire-storm", "trickle_before_p99_ms", "expire-storm: trickle acquire p99 before the kill", "ms"),
      median("expire-storm", "stall_p99_ms", "expire-storm: trickle acquire p99 during the storm", "ms"),
      median("expire-storm", "stall_max_ms", "expire-storm: trickle acquire max during the storm (stall)", "ms"),
      median("expire-storm", "stall_failed", "expire-storm: trickle acquires failed during the storm", ""),
      median("expire-storm", "server_cpu_cores", "expire-storm: server CPU until all gone (3 members)", "cores"),
      median("hold", "held", "hold: leases held", ""),
      median("hold", "setup_acquires_per_s", "hold: setup acquires", "/s"),
      median("hold", "renewals_per_s", "hold: renewals reached", "/s"),
      median("hold", "lowest_remaining_ms", "hold: lowest remaining() seen", "ms"),
      median("hold", "spurious_losses", "hold: spurious losses (must be 0)", ""),
      median("hold", "client_cpu_us_per_op", "hold: client CPU per renewal", "us"),
      median("hold", "server_cpu_cores", "hold: server CPU (3 members)", "cores"),
      median("hold", "server_rss_per_lease_bytes", "hold: server RSS per held lease (3 members)", "B"),
      median("hold", "flood_cycles_per_s", "hold + flood: flood's acquire-release cycles", "/s"),
      median("hold", "flood_renewals_per_s", "hold + flood: renewals reached", "/s"),
      median("hold", "flood_lowest_remaining_ms", "hold + flood: lowest remaining() seen", "ms"),
      median("hold", "flood_spurious_losses", "hold + flood: spurious losses (must be 0)", ""),
      median("hold", "flood_server_cpu_cores", "hold + flood: server CPU (3 members)", "cores"));

  private final Compare.Outcome outcome;
  private final List<String> stores;

  ComparisonTable(Compare.Outcome outcome) {
    this.outcome = outcome;
    List<String> s = new ArrayList<>(outcome.params().stores());
    s.removeIf(store -> outcome.runsOf(store).isEmpty());
    this.stores = s;
  }

  // ---- the figures, aggregated over rounds ----

  /** {@return the values of a figure of a store's workload, one per round that has it (NaN where not measured)} */
  List<Double> values(String store, String workload, String key) {
    List<Double> out = new ArrayList<>();
    for (Compare.Run run : outcome.runsOf(store)) {
      run.result(workload).flatMap(r -> r.get(key)).ifPresent(f -> out.add(f.value()));
    }
    return out;
  }

  @Override
  public Spread spread(String store, String workload, String key) {
    return Spread.of(values(store, workload, key));
  }

  @Override
  public List<Double> samples(String store, String workload, String key) {
    List<Double> out = new ArrayList<>();
    for (Compare.Run run : outcome.runsOf(store)) {
      run.result(workload).ifPresent(r -> out.addAll(r.samples(key)));
    }
    return out;
  }

  /** {@return the value a row's cell shows for {@code store} (the median, sum or pooled percentile); NaN if none} */
  double value(String store, Row row) {
    return switch (row.agg()) {
      case MEDIAN -> spread(store, row.workload(), row.key()).median();
      case SUM -> {
        List<Double> v = values(store, row.workload(), row.key()).stream().filter(d -> !d.isNaN()).toList();
        yield v.isEmpty() ? Double.NaN : v.stream().mapToDouble(Double::doubleValue).sum();
      }
      case POOLED_P50 -> Spread.percentile(samples(store, row.workload(), row.key()), 50);
      case POOLED_P99 -> Spread.percentile(samples(store, row.workload(), row.key()), 99);
      case POOLED_MAX -> Spread.percentile(samples(store, row.workload(), row.key()), 100);
    };
  }

  private String cell(String store, Row row) {
    return row.agg() == Agg.MEDIAN
        ? spread(store, row.workload(), row.key()).format(row.unit())
        : Figure.format(value(store, row), row.unit());
  }

  private List<String> ratioStores() {
    return stores.contains("core") ? stores.stream().filter(s -> !s.equals("core")).toList() : List.of();
  }

  private static String abbreviation(String store) {
    return store.equals("zookeeper") ? "zk" : store;
  }

  static String ratio(double value, double base) {
    if (Double.isNaN(value) || Double.isNaN(base) || base == 0) {
      return "n/a";
    }
    return String.format(Locale.ROOT, "%.2fx", value / base);
  }

  // ---- output ----

  String render() {
    Compare.Params p = outcome.params();
    StringBuilder out = new StringBuilder();
    out.append("leasehold bench compare: ").append(p.rounds()).append(p.rounds() == 1 ? " round" : " rounds")
        .append("; each round runs every store in turn, the order rotated by one each round\n");
    for (int r = 0; r < p.rounds(); r++) {
      out.append(r == 0 ? "  order:" : ";").append(" round ").append(r + 1).append(' ')
          .append(String.join(", ", Compare.order(p.stores(), r)));
    }
    out.append('\n');
    out.append("  each cell: the median over the rounds, with (min..max) when they differ; failover's"
        + " percentiles pool every kill of every round; ratios core/etcd and core/zk are of those values\n");
    Map<String, Object> env = outcome.environment();
    out.append(String.format(Locale.ROOT, "  machine: %s cores; load average %.1f at the start, %.1f at the end; at each start: %s%n",
        env.get("cores"), num(env.get("load_average_start")), num(env.get("load_average_end")), loads()));
    out.append("  data: ").append(env.get("data_dir")).append(" (").append(env.get("filesystem"))
        .append("): every store's data directory and the fsync probe, so one disk for all\n");
    out.append("  disk: 4 KiB write + fdatasync p50 ").append(Figure.format(outcome.fsync().value("fsync_p50_ms"), "ms"))
        .append(" ms, p99 ").append(Figure.format(outcome.fsync().value("fsync_p99_ms"), "ms")).append(" ms\n");
    out.append("  durability: each store at its own default, every write fsync'd before it is acknowledged:\n");
    outcome.settings().forEach((k, v) -> out.append("    ").append(k).append(": ").append(v).append('\n'));
    out.append("  JVM flags of the core's nodes and ZooKeeper's servers (identical): ")
        .append(String.join(" ", strings(env.get("server_jvm_options")))).append('\n');
    if (env.get("server_java") != null) {
      List<String> aot = strings(env.get("core_aot_options"));
      out.append("  their java: ").append(env.get("server_java")).append("; the core's nodes also: ")
          .append(aot.isEmpty() ? "no AOT cache" : String.join(" ", aot)).append('\n');
    }
    out.append("  the bench's JVM (every client; ").append(env.get("java")).append("): ")
        .append(strings(env.get("bench_jvm_options")).isEmpty() ? "no flags" : String.join(" ", strings(env.get("bench_jvm_options"))))
        .append('\n');
    java.time.Duration arWarm = Compare.acquireReleaseWarmup(p.warmup());
    out.append("  warm-up, the same on every store after its cluster started, before anything is measured: acquire-release ")
        .append(p.clients()).append(" clients x ").append(p.window()).append(" for ").append(Durations.format(arWarm))
        .append(", then contended ").append(p.clients()).append(" clients for ").append(Durations.format(p.warmup().minus(arWarm)))
        .append("; each workload then runs ").append(Durations.format(p.settle())).append(" before it measures\n");
    out.append("  parameters:");
    p.toJson().forEach((k, v) -> {
      if (!k.equals("stores") && !k.equals("rounds")) {
        out.append(' ').append(k).append(' ').append(v).append(';');
      }
    });
    out.setLength(out.length() - 1);
    out.append('\n');

    List<String> header = new ArrayList<>(List.of("figure", "unit"));
    header.addAll(stores);
    for (String s : ratioStores()) {
      header.add("core/" + abbreviation(s));
    }
    TextTable table = new TextTable(header.toArray(String[]::new));
    for (Row row : ROWS) {
      List<String> cells = new ArrayList<>(List.of(row.label(), row.unit()));
      for (String s : stores) {
        cells.add(cell(s, row));
      }
      for (String s : ratioStores()) {
        cells.add(ratio(value("core", row), value(s, row)));
      }
      table.row(cells.toArray(String[]::new));
    }
    out.append('\n').append(table.render("")).append('\n');
    out.append("targets (core; of the values above)\n");
    for (CompareTargets.Verdict v : targets()) {
      out.append(String.format(Locale.ROOT, "  %-7s %s: %s%n", v.verdict(), v.target(), v.detail()));
    }
    for (Compare.Run run : outcome.runs()) {
      for (Result r : run.results()) {
        if (r.errorTotal() > 0) {
          out.append("  errors in ").append(run.store()).append(" round ").append(run.round()).append(' ')
              .append(r.workload()).append(": ").append(r.errors()).append('\n');
        }
      }
    }
    outcome.failures().forEach(f -> out.append("  failed: ").append(f).append('\n'));
    return out.toString();
  }

  private String loads() {
    List<String> parts = new ArrayList<>();
    for (Compare.Run r : outcome.runs()) {
      parts.add(String.format(Locale.ROOT, "%s r%d %.1f", abbreviation(r.store()), r.round(), r.loadAverage()));
    }
    return String.join(", ", parts);
  }

  private static double num(Object o) {
    return o instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  private static List<String> strings(Object o) {
    List<String> out = new ArrayList<>();
    if (o instanceof List<?> l) {
      l.forEach(x -> out.add(Objects.toString(x)));
    }
    return out;
  }

  /** {@return the core's targets, each met or missed by how much} */
  List<CompareTargets.Verdict> targets() {
    return CompareTargets.evaluate(this, outcome.params(), outcome.fsync().value("fsync_p99_ms"));
  }

  /** {@return the whole outcome as JSON-ready maps} */
  Map<String, Object> toJson() {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("params", outcome.params().toJson());
    j.put("environment", outcome.environment());
    j.put("fsync", outcome.fsync().toJson());
    j.put("settings", outcome.settings());
    List<Map<String, Object>> rows = new ArrayList<>();
    for (Row row : ROWS) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("workload", row.workload());
      r.put("figure", row.key());
      r.put("aggregate", row.agg().name().toLowerCase(Locale.ROOT));
      r.put("label", row.label());
      r.put("unit", row.unit());
      for (String s : stores) {
        Map<String, Object> cell = new LinkedHashMap<>();
        cell.put("value", value(s, row));
        if (row.agg() == Agg.MEDIAN) {
          Spread sp = spread(s, row.workload(), row.key());
          cell.put("min", sp.min());
          cell.put("max", sp.max());
          cell.put("rounds", sp.n());
        }
        r.put(s, cell);
      }
      for (String s : ratioStores()) {
        double base = value(s, row);
        double core = value("core", row);
        r.put("core/" + abbreviation(s), Double.isNaN(core) || Double.isNaN(base) || base == 0 ? null : core / base);
      }
      rows.add(r);
    }
    j.put("table", rows);
    List<Map<String, Object>> targets = new ArrayList<>();
    for (CompareTargets.Verdict v : targets()) {
      Map<String, Object> t = new LinkedHashMap<>();
      t.put("target", v.target());
      t.put("verdict", v.verdict());
      t.put("detail", v.detail());
      targets.add(t);
    }
    j.put("targets", targets);
    j.put("runs", outcome.runs().stream().map(Compare.Run::toJson).toList());
    j.put("failures", outcome.failures());
    return j;
  }
}
