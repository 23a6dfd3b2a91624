package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.Result;
import io.leasehold.faults.History.Fault;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * The harness for real, short: a 3-node core and 4 clients contending for 3 leases in their own
 * JVMs, a fixed seed, one round of every fault type (the first round always completes); the checker
 * must find no violation, and the run must not be vacuous: faults happened and hit something (an
 * operator delete removed a held lease, a killed client and a long-paused leader had leases held,
 * every clock skew took effect), the leases changed hands, writes were accepted and acknowledged.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
@Tag("integration")
class ShortRunTest {

  @Test
  void aShortRunUnderEveryFaultTypeHasNoViolations() throws Exception {
    Path dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "faults-short-");
    Harness.Options options = new Harness.Options(
        Duration.ofSeconds(Long.getLong("faults.short.seconds", 60)), 42L, 4, 3, Duration.ofSeconds(2), dir, null,
        0.01, 0.01, EnumSet.allOf(FaultType.class), false, System.getProperty("java.class.path"));
    Harness.Outcome outcome;
    try (Harness harness = new Harness(options)) {
      outcome = harness.run();
    }
    System.out.println(outcome.report());
    Result r = outcome.result();
    assertThat(r.overlaps()).as("overlapping tenures").isEmpty();
    assertThat(r.tokenRegressions()).as("tokens going backwards").isEmpty();
    assertThat(r.staleWrites()).as("stale fenced writes accepted").isEmpty();
    assertThat(r.lostWrites()).as("acknowledged writes lost").isEmpty();
    assertThat(r.earlyEnds()).as("live tenures the store ended").isEmpty();
    assertThat(r.historyErrors()).as("incomplete histories (and clock skews that did not take effect)").isEmpty();
    assertThat(r.outOfBounds()).as("outside the configured bounds").isEmpty();
    // Not vacuous.
    assertThat(r.availability().keySet()).as("fault types injected").containsExactlyInAnyOrder(FaultType.values());
    List<Fault> faults = History.read(List.of(), dir.resolve("nemesis.log")).faults();
    assertThat(faults).as("an operator delete removed a held lease")
        .anyMatch(f -> f.type() == FaultType.OPERATOR_DELETE && "yes".equals(f.detail().get("deleted")));
    assertThat(faults).as("a killed client held a lease")
        .anyMatch(f -> f.type() == FaultType.KILL_CLIENT && !"-".equals(f.detail().get("held")));
    assertThat(faults).as("leases were held while the leader was paused")
        .anyMatch(f -> f.type() == FaultType.PAUSE_LEADER_LONG && !"0".equals(f.detail().get("held")));
    assertThat(r.tenuresPerLease()).as("every lease was held").hasSize(3);
    assertThat(r.tenures()).isGreaterThanOrEqualTo(30);
    assertThat(r.handovers()).isGreaterThanOrEqualTo(10);
    assertThat(r.accepted()).isPositive();
    assertThat(r.ackedKv()).isPositive();
    assertThat(dir.resolve("report.json")).content().contains("\"ok\": true");
    // What it left is enough to check it again, to the same verdict (`leasehold faults check`).
    assertThat(dir.resolve(Harness.FINAL_READ)).isNotEmptyFile();
    StringWriter again = new StringWriter();
    CommandLine cl = FaultsMain.commandLine();
    cl.setOut(new PrintWriter(again));
    assertThat(cl.execute("check", dir.toString())).as(again.toString()).isZero();
    assertThat(again.toString()).contains("tenures " + r.tenures() + ", handovers " + r.handovers()).doesNotContain("not checked");
  }
}
