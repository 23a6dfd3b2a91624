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
 * A short run with late copies only: 2 clients on the managed core, their writes copied and
 * delivered again up to 2 TTLs later; no violation, and no copy of an answered write applied again.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
@Tag("integration")
class LateCopyRunTest {

  @Test
  void lateCopiesOfWritesAreNeverAppliedTwice() throws Exception {
    Path dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "faults-late-");
    Harness.Options options = new Harness.Options(Duration.ofSeconds(10), 42L, 2, 2, Duration.ofSeconds(1), dir, null,
        0.01, 0.01, EnumSet.of(FaultType.LATE_COPY), false, System.getProperty("java.class.path"));
    Harness.Outcome outcome;
    try (Harness harness = new Harness(options)) {
      outcome = harness.run();
    }
    System.out.println(outcome.report());
    Result r = outcome.result();
    assertThat(r.violations()).as(outcome.report()).isZero();
    List<Fault> faults = History.read(List.of(), dir.resolve("nemesis.log")).faults();
    assertThat(faults).isNotEmpty().allMatch(f -> f.type() == FaultType.LATE_COPY);
    assertThat(faults).as("copies were made and all answered")
        .anyMatch(f -> Integer.parseInt(f.detail().get("copies")) > 0)
        .noneMatch(f -> f.detail().containsKey("unsent"));
    assertThat(faults).as("no copy of an answered write applied again")
        .allMatch(f -> "0".equals(f.detail().get("reapplied")));
    assertThat(r.tenures()).isPositive();
    assertThat(r.accepted()).isPositive();
  }
}
