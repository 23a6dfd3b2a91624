package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The soak table: one row per run, faults per type, violations by kind, a total row, the verdict. */
@Timeout(30)
class SoakTest {

  private static final long MS = 1_000_000L;

  private static Checker.Result result(List<String> lines) {
    return Checker.check(History.parse(lines), new Checker.FinalState(Set.of(), Map.of()), new Checker.Bounds(0.01));
  }

  @Test
  void theTableSumsTheRunsAndFailsWhenOneHadAViolation() {
    Checker.Result clean = result(List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "END c1 L 10 " + 100 * MS + " released",
        "START c2 L 20 " + 150 * MS + " " + 200 * MS,
        "END c2 L 20 " + 300 * MS + " released",
        "FAULT 1 KILL_CLIENT c1 " + 110 * MS + " " + 120 * MS + " held=L restarted=c1.2",
        "FAULT 2 OPERATOR_DELETE L " + 210 * MS + " " + 220 * MS + " holder=c2 silent=no deleted=yes"));
    Checker.Result overlap = result(List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "END c1 L 10 " + 100 * MS + " released",
        "START c2 L 20 " + 50 * MS + " " + 60 * MS,
        "END c2 L 20 " + 300 * MS + " released"));
    String table = Soak.table(List.of(
        new Soak.Row(1, 7, clean, null), new Soak.Row(2, 8, overlap, null), new Soak.Row(3, 9, null, "no leader")));
    List<String> lines = table.lines().toList();
    assertThat(lines.get(0)).contains("KC", "OD", "tenures", "handovers", "overlap", "early", "bounds", "twice", "result");
    assertThat(lines.get(1)).matches("\\s+1\\s+7(\\s+\\d+){12}\\s+2\\s+1(\\s+0){8}\\s+ok");
    assertThat(lines.get(2)).matches("\\s+2\\s+8(\\s+0){12}\\s+2\\s+1\\s+1(\\s+0){7}\\s+FAILED");
    assertThat(lines.get(3)).contains("could not finish: no leader");
    assertThat(lines.get(4)).startsWith(" all").endsWith("FAILED (2 of 3 runs)");
    assertThat(table).contains("KC kill-client", "OD operator-delete");
  }
}
