package io.leasehold.faults;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The checker's verdict as a human report and as JSON. */
final class Report {

  private Report() {}

  static String text(Harness.Options o, Checker.Result r) {
    return String.format(Locale.ROOT, "leasehold faults: seed %d, %d clients, %d leases, ttl %d ms, nemesis %d s, backend %s,"
        + " maxClockDrift %s, clock skew %s%s%n",
        o.seed(), o.clients(), o.leases(), o.ttl().toMillis(), o.duration().toSeconds(), o.backendName(),
        o.maxClockDrift(), o.clockSkew(), o.sessionPerLease() ? ", a session per lease" : "")
        + findings(r);
  }

  /** {@return what the checker found: the counts, the gaps after faults, the violations by kind} */
  static String findings(Checker.Result r) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "tenures %d, handovers %d; fenced writes accepted %d, rejected %d, unknown %d;"
        + " acknowledged KV writes %d%n", r.tenures(), r.handovers(), r.accepted(), r.rejected(), r.unknown(), r.ackedKv()));
    b.append("tenures per lease:");
    r.tenuresPerLease().forEach((lease, n) -> b.append(' ').append(lease).append(' ').append(n));
    b.append('\n');
    b.append("faults (time a lease had no holder after each: median / max):\n");
    for (Map.Entry<FaultType, Checker.Availability> e : r.availability().entrySet()) {
      Checker.Availability a = e.getValue();
      b.append(String.format(Locale.ROOT, "  %-17s %3d injected, %3d gaps measured, gap %7.0f / %7.0f ms%n",
          e.getKey(), a.faults(), a.measured(), a.medianGapMillis(), a.maxGapMillis()));
    }
    b.append("violations:\n");
    section(b, "overlapping tenures", r.overlaps());
    section(b, "fencing tokens going backwards", r.tokenRegressions());
    section(b, "stale fenced writes accepted", r.staleWrites());
    section(b, "acknowledged writes lost", r.lostWrites());
    section(b, "live tenures the store ended", r.earlyEnds());
    section(b, "incomplete histories", r.historyErrors());
    section(b, "outside the configured bounds", r.outOfBounds());
    section(b, "writes applied twice", r.appliedTwice());
    b.append(r.violations() == 0 ? "OK: no violations\n" : "FAILED: " + r.violations() + " violations\n");
    return b.toString();
  }

  private static void section(StringBuilder b, String title, List<String> items) {
    b.append(String.format(Locale.ROOT, "  %-32s %d%n", title, items.size()));
    items.stream().limit(20).forEach(i -> b.append("    ").append(i).append('\n'));
    if (items.size() > 20) {
      b.append("    … and ").append(items.size() - 20).append(" more\n");
    }
  }

  static String json(Harness.Options o, Checker.Result r) {
    StringBuilder b = new StringBuilder("{\n");
    b.append("  \"seed\": ").append(o.seed()).append(",\n");
    b.append("  \"clients\": ").append(o.clients()).append(",\n");
    b.append("  \"leases\": ").append(o.leases()).append(",\n");
    b.append("  \"maxClockDrift\": ").append(o.maxClockDrift()).append(",\n");
    b.append("  \"clockSkew\": ").append(o.clockSkew()).append(",\n");
    b.append("  \"ttlMillis\": ").append(o.ttl().toMillis()).append(",\n");
    b.append("  \"durationSeconds\": ").append(o.duration().toSeconds()).append(",\n");
    b.append("  \"leaseBackend\": ").append(o.leaseBackend() == null ? "null" : quote(o.leaseBackend())).append(",\n");
    b.append("  \"tenures\": ").append(r.tenures()).append(",\n");
    b.append("  \"handovers\": ").append(r.handovers()).append(",\n");
    b.append("  \"tenuresPerLease\": {");
    String s0 = "";
    for (Map.Entry<String, Integer> e : r.tenuresPerLease().entrySet()) {
      b.append(s0).append(quote(e.getKey())).append(": ").append(e.getValue());
      s0 = ", ";
    }
    b.append("},\n");
    b.append("  \"fencedWrites\": {\"accepted\": ").append(r.accepted()).append(", \"rejected\": ").append(r.rejected())
        .append(", \"unknown\": ").append(r.unknown()).append("},\n");
    b.append("  \"ackedKvWrites\": ").append(r.ackedKv()).append(",\n");
    b.append("  \"faults\": {");
    String sep = "\n";
    for (Map.Entry<FaultType, Checker.Availability> e : r.availability().entrySet()) {
      Checker.Availability a = e.getValue();
      b.append(sep).append("    ").append(quote(e.getKey().name())).append(": {\"injected\": ").append(a.faults())
          .append(", \"measured\": ").append(a.measured())
          .append(", \"medianGapMillis\": ").append(number(a.medianGapMillis()))
          .append(", \"maxGapMillis\": ").append(number(a.maxGapMillis())).append('}');
      sep = ",\n";
    }
    b.append("\n  },\n  \"violations\": {\n");
    b.append("    \"overlappingTenures\": ").append(list(r.overlaps())).append(",\n");
    b.append("    \"tokensBackwards\": ").append(list(r.tokenRegressions())).append(",\n");
    b.append("    \"staleWritesAccepted\": ").append(list(r.staleWrites())).append(",\n");
    b.append("    \"acknowledgedWritesLost\": ").append(list(r.lostWrites())).append(",\n");
    b.append("    \"liveTenuresEndedByTheStore\": ").append(list(r.earlyEnds())).append(",\n");
    b.append("    \"incompleteHistories\": ").append(list(r.historyErrors())).append(",\n");
    b.append("    \"outsideConfiguredBounds\": ").append(list(r.outOfBounds())).append(",\n");
    b.append("    \"writesAppliedTwice\": ").append(list(r.appliedTwice())).append("\n  },\n");
    b.append("  \"ok\": ").append(r.violations() == 0).append("\n}\n");
    return b.toString();
  }

  private static String number(double d) {
    return Double.isNaN(d) ? "null" : String.format(Locale.ROOT, "%.1f", d);
  }

  private static String list(List<String> items) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < items.size(); i++) {
      b.append(i == 0 ? "" : ", ").append(quote(items.get(i)));
    }
    return b.append(']').toString();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        default -> {
          if (c < 0x20) {
            b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
