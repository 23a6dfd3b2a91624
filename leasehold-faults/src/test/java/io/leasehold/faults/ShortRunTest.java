package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The harness for real, short: a 3-node core and 4 contending clients in their own JVMs, a fixed
 * seed, every fault type at least once; the checker must find no violation, and the run must not
 * be vacuous (faults happened, the lease changed hands, writes were accepted and acknowledged).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class ShortRunTest {

  @Test
  void aShortRunUnderEveryFaultTypeHasNoViolations() throws Exception {
    Path dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "faults-short-");
    Harness.Options options = new Harness.Options(
        Duration.ofSeconds(Long.getLong("faults.short.seconds", 80)), 42L, 4, Duration.ofSeconds(2), dir, null,
        System.getProperty("java.class.path"));
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
    assertThat(r.historyErrors()).as("incomplete histories").isEmpty();
    // Not vacuous.
    assertThat(r.availability().keySet()).as("fault types injected").containsExactlyInAnyOrder(FaultType.values());
    assertThat(r.tenures()).isGreaterThanOrEqualTo(20);
    assertThat(r.handovers()).isGreaterThanOrEqualTo(5);
    assertThat(r.accepted()).isPositive();
    assertThat(r.ackedKv()).isPositive();
    assertThat(dir.resolve("report.json")).content().contains("\"ok\": true");
  }
}
