package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.cli.FaultScript.Fault;
import io.leasehold.cli.FaultScript.Kind;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class FaultPlanTest {

  @Test
  void theDefaultRunFitsAllThreeFaultsAtTheirFractions() {
    FaultScript.Plan plan = FaultScript.plan(Duration.ofSeconds(15), Duration.ofSeconds(2));

    assertThat(plan.faults())
        .containsExactly(
            new Fault(Kind.PAUSE, Duration.ofMillis(2250)),
            new Fault(Kind.PARTITION, Duration.ofMillis(6750)),
            new Fault(Kind.CRASH, Duration.ofMillis(11250)));
    assertThat(plan.skipped()).isEmpty();
  }

  @Test
  void aShortRunKeepsWhatFitsAndSaysWhatItSkipped() {
    FaultScript.Plan plan = FaultScript.plan(Duration.ofSeconds(8), Duration.ofSeconds(2));

    assertThat(plan.faults()).extracting(Fault::kind).containsExactly(Kind.PAUSE);
    assertThat(plan.skipped()).containsExactly(Kind.PARTITION, Kind.CRASH);
  }

  @Test
  void faultsNeverOverlapAndEachEndsBeforeTheRun() {
    Duration ttl = Duration.ofSeconds(1);
    for (int seconds = 3; seconds <= 30; seconds++) {
      Duration run = Duration.ofSeconds(seconds);
      Duration free = Duration.ZERO;
      for (Fault f : FaultScript.plan(run, ttl).faults()) {
        assertThat(f.at()).as("%s in a %s run", f.kind(), run).isGreaterThanOrEqualTo(free);
        Duration busy = f.kind() == Kind.CRASH ? Duration.ZERO : ttl.multipliedBy(2);
        free = f.at().plus(busy);
        assertThat(free).isLessThanOrEqualTo(run);
      }
    }
  }
}
