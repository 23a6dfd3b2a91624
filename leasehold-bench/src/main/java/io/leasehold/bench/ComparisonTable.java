package io.leasehold.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The one table of a compare run: a row per figure, a column per store, and the ratio of each
 * store to etcd; then the targets the core must meet, each met or missed by how much.
 */
final class ComparisonTable {

  /** A row: a figure of a workload. */
  private record Row(String workload, String key, String label) {}

  private static final List<Row> ROWS = List.of(
      new Row("low-load", "acquire_p50_ms", "low load (1 client, 1 in flight): acquire p50"),
      new Row("low-load", "acquire_p99_ms", "low load: acquire p99"),
      new Row("acquire-release", "cycles_per_s", "acquire-release: cycles"),
      new Row("acquire-release", "acquire_p50_ms", "acquire-release: acquire p50"),
      new Row("acquire-release", "acquire_p99_ms", "acquire-release: acquire p99"),
      new Row("acquire-release", "acquire_p999_ms", "acquire-release: acquire p99.9"),
      new Row("acquire-release", "release_p99_ms", "acquire-release: release p99"),
      new Row("acquire-release", "errors", "acquire-release: errors"),
      new Row("contended", "handovers_per_s", "contended: handovers"),
      new Row("contended", "handover_gap_p50_ms", "contended: release -> next acquire p50"),
      new Row("contended", "handover_gap_p99_ms", "contended: release -> next acquire p99"),
      new Row("contended", "errors", "contended: errors"),
      new Row("hold", "held", "hold: leases held"),
      new Row("hold", "setup_acquires_per_s", "hold: setup acquires"),
      new Row("hold", "renewals_per_s", "hold: renewals reached"),
      new Row("hold", "lowest_remaining_ms", "hold: lowest remaining() seen"),
      new Row("hold", "spurious_losses", "hold: spurious losses (must be 0)"),
      new Row("hold", "client_cpu_cores", "hold: client CPU"),
      new Row("hold", "server_cpu_cores", "hold: server CPU (3 members)"),
      new Row("hold", "server_rss_per_lease_bytes", "hold: server RSS per lease (3 members)"),
      new Row("failover", "next_acquire_p50_ms", "failover: kill leader -> next acquire p50"),
      new Row("failover", "next_acquire_max_ms", "failover: kill leader -> next acquire max"),
      new Row("failover", "lease_held_through", "failover: lease held through the kill"),
      new Row("failover", "lease_renewed_p50_ms", "failover: held through: kill -> renewal confirmed p50"),
      new Row("failover", "lease_lost", "failover: lease lost in the kill"),
      new Row("failover", "lease_reacquired_max_ms", "failover: lost: kill -> acquired again max"));

  /** The acquire/release target compares with these. */
  static final double RENEWALS_TARGET = 50_000;
  static final int RENEWALS_TARGET_LEASES = 100_000;

  /**
   * One target's verdict.
   *
   * @param target what the core must reach
   * @param verdict {@code met}, {@code missed} or {@code not measured}
   * @param detail the figures behind it and, when missed, by how much
   */
  record Verdict(String target, String verdict, String detail) {}

  private final Compare.Outcome outcome;
  private final List<String> stores;
  private final boolean ratios;

  ComparisonTable(Compare.Outcome outcome) {
    this.outcome = outcome;
    this.stores = new ArrayList<>(outcome.results().keySet());
    this.ratios = stores.contains("etcd");
  }

  /** {@return the value of a figure of a store's workload, NaN if absent} */
  double value(String store, String workload, String key) {
    List<Result> list = outcome.results().get(store);
    if (list == null) {
      return Double.NaN;
    }
    return list.stream().filter(r -> r.workload().equals(workload)).findFirst()
        .map(r -> r.value(key)).orElse(Double.NaN);
  }

  private String unit(String workload, String key) {
    for (List<Result> list : outcome.results().values()) {
      for (Result r : list) {
        if (r.workload().equals(workload)) {
          var f = r.get(key);
          if (f.isPresent()) {
            return f.get().unit();
          }
        }
      }
    }
    return "";
  }

  private List<String> ratioStores() {
    return stores.stream().filter(s -> !s.equals("etcd")).toList();
  }

  String render() {
    List<String> header = new ArrayList<>();
    header.add("figure");
    header.add("unit");
    header.addAll(stores);
    if (ratios) {
      for (String s : ratioStores()) {
        header.add(abbreviation(s) + "/etcd");
      }
    }
    TextTable table = new TextTable(header.toArray(String[]::new));
    for (Row row : ROWS) {
      List<String> cells = new ArrayList<>();
      cells.add(row.label());
      String unit = unit(row.workload(), row.key());
      cells.add(unit);
      for (String s : stores) {
        cells.add(Figure.format(value(s, row.workload(), row.key()), unit));
      }
      if (ratios) {
        double etcd = value("etcd", row.workload(), row.key());
        for (String s : ratioStores()) {
          cells.add(ratio(value(s, row.workload(), row.key()), etcd));
        }
      }
      table.row(cells.toArray(String[]::new));
    }
    StringBuilder out = new StringBuilder();
    out.append("leasehold bench compare\n");
    out.append("  disk: 4 KiB write + fdatasync p50 ").append(Figure.format(outcome.fsync().value("fsync_p50_ms"), "ms"))
        .append(" ms, p99 ").append(Figure.format(outcome.fsync().value("fsync_p99_ms"), "ms")).append(" ms\n");
    outcome.params().toJson().forEach((k, v) -> out.append("  ").append(k).append(' ').append(v).append('\n'));
    outcome.settings().forEach((k, v) -> out.append("  ").append(k).append(" settings: ").append(v).append('\n'));
    out.append('\n').append(table.render("")).append('\n');
    out.append("targets (core)\n");
    for (Verdict v : targets()) {
      out.append(String.format(Locale.ROOT, "  %-7s %s: %s%n", v.verdict(), v.target(), v.detail()));
    }
    outcome.results().forEach((store, list) -> list.forEach(r -> {
      if (r.errorTotal() > 0) {
        out.append("  errors in ").append(store).append(' ').append(r.workload()).append(": ").append(r.errors()).append('\n');
      }
    }));
    outcome.failures().forEach((k, v) -> out.append("  ").append(k).append(" stopped early: ").append(v).append('\n'));
    return out.toString();
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

  /** {@return the three targets of the core, each met or missed by how much} */
  List<Verdict> targets() {
    List<Verdict> out = new ArrayList<>();
    out.add(throughputTarget());
    out.add(renewalTarget());
    out.add(latencyTarget());
    return out;
  }

  private Verdict throughputTarget() {
    String target = "acquire/release throughput >= etcd's and >= ZooKeeper's";
    double core = value("core", "acquire-release", "cycles_per_s");
    double etcd = value("etcd", "acquire-release", "cycles_per_s");
    double zk = value("zookeeper", "acquire-release", "cycles_per_s");
    if (Double.isNaN(core) || (Double.isNaN(etcd) && Double.isNaN(zk))) {
      return new Verdict(target, "n/a", "not measured (needs core and at least one of etcd, zookeeper)");
    }
    double best = Math.max(Double.isNaN(etcd) ? 0 : etcd, Double.isNaN(zk) ? 0 : zk);
    String detail = "core " + perSecond(core) + ", etcd " + perSecond(etcd) + ", zookeeper " + perSecond(zk);
    if (core >= best) {
      return new Verdict(target, "met", detail + String.format(Locale.ROOT, " (%.2fx the better of the two)", core / best));
    }
    return new Verdict(target, "MISSED", detail + String.format(Locale.ROOT, "; short by %s/s (%.0f%%)",
        Figure.format(best - core, "/s"), 100 * (best - core) / best));
  }

  private static String perSecond(double value) {
    return Double.isNaN(value) ? "not measured" : Figure.format(value, "/s") + "/s";
  }

  private Verdict renewalTarget() {
    String target = String.format(Locale.ROOT, ">= %,.0f renewals/s with %,d held leases, 0 spurious losses",
        RENEWALS_TARGET, RENEWALS_TARGET_LEASES);
    double renewals = value("core", "hold", "renewals_per_s");
    double held = value("core", "hold", "held");
    double losses = value("core", "hold", "spurious_losses");
    if (Double.isNaN(renewals)) {
      return new Verdict(target, "n/a", "not measured");
    }
    String detail = String.format(Locale.ROOT, "%s renewals/s with %s leases held, %s spurious losses",
        Figure.format(renewals, "/s"), Figure.format(held, ""), Figure.format(losses, ""));
    List<String> misses = new ArrayList<>();
    if (renewals < RENEWALS_TARGET) {
      misses.add(String.format(Locale.ROOT, "short by %s/s (%.0f%%)",
          Figure.format(RENEWALS_TARGET - renewals, "/s"), 100 * (RENEWALS_TARGET - renewals) / RENEWALS_TARGET));
    }
    if (held < RENEWALS_TARGET_LEASES) {
      misses.add(String.format(Locale.ROOT, "%s leases fewer than %,d", Figure.format(RENEWALS_TARGET_LEASES - held, ""), RENEWALS_TARGET_LEASES));
    }
    if (losses > 0) {
      misses.add(Figure.format(losses, "") + " spurious losses");
    }
    return misses.isEmpty()
        ? new Verdict(target, "met", detail)
        : new Verdict(target, "MISSED", detail + "; " + String.join(", ", misses));
  }

  private Verdict latencyTarget() {
    String target = "low-load acquire p99 <= 2 x the disk's fsync p99";
    double p99 = value("core", "low-load", "acquire_p99_ms");
    double fsync = outcome.fsync().value("fsync_p99_ms");
    if (Double.isNaN(p99) || Double.isNaN(fsync)) {
      return new Verdict(target, "n/a", "not measured");
    }
    double bound = 2 * fsync;
    String detail = String.format(Locale.ROOT, "acquire p99 %s ms, fsync p99 %s ms, bound %s ms",
        Figure.format(p99, "ms"), Figure.format(fsync, "ms"), Figure.format(bound, "ms"));
    if (p99 <= bound) {
      return new Verdict(target, "met", detail);
    }
    return new Verdict(target, "MISSED", detail + String.format(Locale.ROOT, "; over by %s ms (%.1fx the bound)",
        Figure.format(p99 - bound, "ms"), p99 / bound));
  }

  /** {@return the whole outcome as JSON-ready maps} */
  Map<String, Object> toJson() {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("params", outcome.params().toJson());
    j.put("fsync", outcome.fsync().toJson());
    j.put("settings", outcome.settings());
    List<Map<String, Object>> rows = new ArrayList<>();
    for (Row row : ROWS) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("workload", row.workload());
      r.put("figure", row.key());
      r.put("label", row.label());
      r.put("unit", unit(row.workload(), row.key()));
      double etcd = value("etcd", row.workload(), row.key());
      for (String s : stores) {
        double v = value(s, row.workload(), row.key());
        r.put(s, v);
        if (ratios && !s.equals("etcd")) {
          r.put(abbreviation(s) + "/etcd", Double.isNaN(v) || Double.isNaN(etcd) || etcd == 0 ? null : v / etcd);
        }
      }
      rows.add(r);
    }
    j.put("table", rows);
    List<Map<String, Object>> targets = new ArrayList<>();
    for (Verdict v : targets()) {
      Map<String, Object> t = new LinkedHashMap<>();
      t.put("target", v.target());
      t.put("verdict", v.verdict());
      t.put("detail", v.detail());
      targets.add(t);
    }
    j.put("targets", targets);
    Map<String, Object> results = new LinkedHashMap<>();
    outcome.results().forEach((s, list) -> results.put(s, list.stream().map(Result::toJson).toList()));
    j.put("results", results);
    j.put("failures", outcome.failures());
    return j;
  }
}
