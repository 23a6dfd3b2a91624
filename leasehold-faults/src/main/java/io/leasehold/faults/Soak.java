package io.leasehold.faults;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code leasehold faults soak}: many runs, one after another, with consecutive seeds; one table. */
@Command(
    name = "soak",
    mixinStandardHelpOptions = true,
    header = "Runs the fault harness --runs times with seeds S, S+1, ... and prints one table.",
    description = {
      "Each run is a whole `leasehold faults` run (same options) in --dir/run-<i>, with its own histories and report.",
      "The table has one row per run: faults injected per type, tenures, handovers and violations by kind; the last"
          + " row sums them. Exits 0 when no run had a violation, 1 when one had (or could not finish), 2 for bad options."
    })
final class Soak implements Callable<Integer> {

  /** Column names of the fault types, in {@link FaultType} order. */
  private static final Map<FaultType, String> SHORT = new EnumMap<>(Map.ofEntries(
      Map.entry(FaultType.KILL_NODE, "KN"), Map.entry(FaultType.PAUSE_NODE, "PN"),
      Map.entry(FaultType.PAUSE_LEADER_LONG, "PL"), Map.entry(FaultType.PARTITION_NODE, "PT"),
      Map.entry(FaultType.ISOLATE_NODE, "IS"), Map.entry(FaultType.PAUSE_HOLDER, "PH"),
      Map.entry(FaultType.PARTITION_CLIENT, "PC"), Map.entry(FaultType.KILL_CLIENT, "KC"),
      Map.entry(FaultType.OPERATOR_DELETE, "OD"), Map.entry(FaultType.CLOCK_SKEW, "CS"),
      Map.entry(FaultType.MEMBERSHIP_CHANGE, "MC"), Map.entry(FaultType.LATE_COPY, "LC")));

  private static final String[] KINDS = {"overlap", "token", "stale", "lost", "early", "incompl", "bounds", "twice"};

  @Spec private CommandSpec spec;

  @Mixin private RunOptions run;

  @Option(names = "--runs", paramLabel = "N", defaultValue = "5", description = "How many runs, 1 to 1000 (default: ${DEFAULT-VALUE}).")
  private int runs;

  @Option(names = "--seed", paramLabel = "S", description = "The first run's seed; run i has S + i - 1 (default: random, printed).")
  private Long seed;

  @Option(names = "--dir", paramLabel = "DIR", description = "Where the runs' directories go; must be empty or absent (default: a new temporary directory).")
  private Path dir;

  /** One row of the table. */
  record Row(int run, long seed, Checker.Result result, String error) {}

  @Override
  public Integer call() throws Exception {
    if (runs < 1 || runs > 1000) {
      throw RunOptions.bad(spec, "--runs must be between 1 and 1000; was " + runs);
    }
    long first = seed != null ? seed : new SecureRandom().nextLong();
    Harness.Options probe = run.toOptions(spec, first, Path.of("."));
    if (dir != null) {
      RunOptions.checkEmpty(spec, dir);
    }
    Path where = dir != null ? dir : Files.createTempDirectory("leasehold-soak-");
    PrintWriter out = spec.commandLine().getOut();
    out.printf(Locale.ROOT, "leasehold faults soak: %d runs of %ds, seeds %d..%d, backend %s, %d clients, %d leases, ttl %d ms,"
            + " clock skew %s (maxClockDrift %s); runs in %s%n",
        runs, probe.duration().toSeconds(), first, first + runs - 1, probe.backendName(), probe.clients(), probe.leases(),
        probe.ttl().toMillis(), probe.clockSkew(), probe.maxClockDrift(), where.toAbsolutePath());
    out.flush();
    List<Row> rows = new ArrayList<>();
    for (int i = 1; i <= runs; i++) {
      long s = first + i - 1;
      Path runDir = where.resolve("run-" + i);
      Harness.Options options = run.toOptions(spec, s, runDir);
      Row row;
      try (Harness harness = new Harness(options)) {
        Harness.Outcome outcome = harness.run();
        row = new Row(i, s, outcome.result(), null);
      } catch (RuntimeException e) {
        row = new Row(i, s, null, String.valueOf(e.getMessage()));
      }
      rows.add(row);
      out.println("run " + i + " (seed " + s + "): " + (row.error() != null ? "could not finish: " + row.error()
          : row.result().violations() == 0 ? "ok" : row.result().violations() + " violations") + " (" + runDir + ")");
      out.flush();
    }
    String table = table(rows);
    Files.writeString(where.resolve("soak.txt"), table, StandardCharsets.UTF_8);
    out.print(table);
    out.flush();
    return rows.stream().allMatch(r -> r.error() == null && r.result().violations() == 0) ? 0 : 1;
  }

  private static int[] kinds(Checker.Result r) {
    return new int[] {r.overlaps().size(), r.tokenRegressions().size(), r.staleWrites().size(), r.lostWrites().size(),
        r.earlyEnds().size(), r.historyErrors().size(), r.outOfBounds().size(), r.appliedTwice().size()};
  }

  static String table(List<Row> rows) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "%4s %20s", "run", "seed"));
    for (String s : SHORT.values()) {
      b.append(String.format(Locale.ROOT, " %3s", s));
    }
    b.append(String.format(Locale.ROOT, " %8s %9s", "tenures", "handovers"));
    for (String k : KINDS) {
      b.append(String.format(Locale.ROOT, " %7s", k));
    }
    b.append("  result\n");
    Map<FaultType, Integer> faultTotals = new EnumMap<>(FaultType.class);
    long tenures = 0;
    long handovers = 0;
    int[] totals = new int[KINDS.length];
    int failed = 0;
    for (Row r : rows) {
      b.append(String.format(Locale.ROOT, "%4d %20d", r.run(), r.seed()));
      if (r.result() == null) {
        failed++;
        b.append("  could not finish: ").append(r.error()).append('\n');
        continue;
      }
      for (FaultType t : SHORT.keySet()) {
        Checker.Availability a = r.result().availability().get(t);
        int n = a == null ? 0 : a.faults();
        faultTotals.merge(t, n, Integer::sum);
        b.append(String.format(Locale.ROOT, " %3d", n));
      }
      tenures += r.result().tenures();
      handovers += r.result().handovers();
      b.append(String.format(Locale.ROOT, " %8d %9d", r.result().tenures(), r.result().handovers()));
      int[] k = kinds(r.result());
      for (int i = 0; i < k.length; i++) {
        totals[i] += k[i];
        b.append(String.format(Locale.ROOT, " %7d", k[i]));
      }
      boolean ok = r.result().violations() == 0;
      if (!ok) {
        failed++;
      }
      b.append(ok ? "  ok\n" : "  FAILED\n");
    }
    b.append(String.format(Locale.ROOT, "%4s %20s", "all", rows.size() + " runs"));
    for (FaultType t : SHORT.keySet()) {
      b.append(String.format(Locale.ROOT, " %3d", faultTotals.getOrDefault(t, 0)));
    }
    b.append(String.format(Locale.ROOT, " %8d %9d", tenures, handovers));
    for (int total : totals) {
      b.append(String.format(Locale.ROOT, " %7d", total));
    }
    b.append(failed == 0 ? "  ok\n" : "  FAILED (" + failed + " of " + rows.size() + " runs)\n");
    b.append("faults: ");
    String sep = "";
    for (Map.Entry<FaultType, String> e : SHORT.entrySet()) {
      b.append(sep).append(e.getValue()).append(' ').append(e.getKey().name().toLowerCase(Locale.ROOT).replace('_', '-'));
      sep = ", ";
    }
    b.append("\nviolations: overlap = overlapping tenures, token = fencing tokens going backwards, stale = stale fenced"
        + " writes accepted, lost = acknowledged writes lost, early = live tenures the store ended, incompl = incomplete histories, bounds = outside the"
        + " configured bounds (each run's report.txt lists them)\n");
    return b.toString();
  }
}
