package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.Result;
import io.leasehold.faults.History.Fault;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A fault step that cannot finish (seen once: an add-node that Ratis never completed, refused for
 * three minutes) ends the nemesis, not the run: the harness heals, stops the clients and checks
 * what they recorded, records the fault it was in, and fails the run with an error that says so.
 * Before, it threw out of the run with no report, so 32 minutes of histories gave no verdict.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@Tag("integration")
class StoppedEarlyTest {

  @Test
  void aFaultThatCannotFinishStillEndsInACheckedReport() throws Exception {
    Path dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "faults-stopped-");
    Harness.Options options = new Harness.Options(
        Duration.ofSeconds(1), 7L, 2, 1, Duration.ofSeconds(2), dir, null,
        0.01, 0.01, EnumSet.of(FaultType.KILL_CLIENT), false, System.getProperty("java.class.path"));
    Harness.Outcome outcome;
    try (Harness harness = new Harness(options)) {
      harness.beforeFault = type -> {
        throw new IllegalStateException("gave up waiting for the step this test holds back");
      };
      outcome = harness.run();
    }
    System.out.println(outcome.report());
    Result r = outcome.result();
    assertThat(r.historyErrors())
        .as("the report says why the run failed")
        .anyMatch(e -> e.startsWith("the nemesis stopped early, at fault 1: gave up waiting for the step"));
    assertThat(r.violations()).as("nothing else is wrong").isEqualTo(r.historyErrors().size());
    assertThat(r.tenures()).as("the histories until then were checked").isPositive();
    List<Fault> faults = History.read(List.of(), dir.resolve("nemesis.log")).faults();
    assertThat(faults).as("the fault in progress is recorded").singleElement()
        .satisfies(f -> {
          assertThat(f.type()).isEqualTo(FaultType.KILL_CLIENT);
          assertThat(f.detail()).containsEntry("aborted", "IllegalStateException");
        });
    assertThat(dir.resolve("report.json")).content().contains("\"ok\": false");
  }
}
