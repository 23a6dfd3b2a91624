package io.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * Plumbing of {@code bench cold-start} on the in-process memory store: its phases are measured
 * second by second, and the seconds add up to the phase. No figure's size is checked.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ColdStartTest {

  static {
    BenchMain.quietLogs();
  }

  @Test
  void eachPhaseIsRecordedSecondBySecondAndTheSecondsAddUpToThePhase() throws InterruptedException {
    Target memory = Target.ofClients("memory", ClientFactory.forUri("memory:"));

    Result r = new ColdStart(memory, new ColdStart.Params(2, 4, Duration.ofSeconds(5),
        Duration.ofMillis(2_000), Duration.ofMillis(300), true)).run();

    for (String phase : List.of("cold", "warm")) {
      @SuppressWarnings("unchecked")
      Map<String, Object> details = (Map<String, Object>) ((Map<String, Object>) r.toJson().get("details")).get(phase);
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> seconds = (List<Map<String, Object>>) ((Map<String, Object>) details.get("details")).get("per_second");
      assertThat(seconds).as(phase).hasSize(2);
      long sum = seconds.stream().mapToLong(s -> ((Number) s.get("cycles")).longValue()).sum();
      double phaseCycles = r.value(phase + "_cycles_per_s") * 2.0;
      assertThat((double) sum).as("%s: the seconds' cycles add up to the phase's", phase).isCloseTo(phaseCycles, org.assertj.core.data.Offset.offset(0.5));
      assertThat(sum).as(phase).isPositive();
    }
    assertThat(r.value("cold_first_second_cycles")).isPositive();
    assertThat(r.get("start_to_serving_s")).hasValueSatisfying(f -> assertThat(f.measured()).as("no cluster started").isFalse());
    assertThat(r.get("restarted_cycles_per_s")).as("no cluster to restart").isEmpty();
    assertThat(r.toTable()).contains("cold: cycles per second: ", "warm: acquire p99 per second (ms): ");
  }

  @Test
  void aStoreThatRunsAlreadyOrAPhaseOutOfRangeIsBadUsage() {
    StringWriter err = new StringWriter();
    CommandLine cmd = BenchMain.commandLine();
    cmd.setOut(new PrintWriter(new StringWriter()));
    cmd.setErr(new PrintWriter(err));

    assertThat(cmd.execute("cold-start", "--backend", "memory:")).isEqualTo(2);
    assertThat(err.toString()).contains("cold-start needs --start");
    // Checked before anything starts: no cluster is launched for a bad option.
    assertThat(cmd.execute("cold-start", "--start", "core", "--phase", "0s")).isEqualTo(2);
    assertThat(err.toString()).contains("--phase must be between 1s and 10m; was 0ms");
    assertThat(cmd.execute("cold-start", "--start", "core", "--warm", "2h")).isEqualTo(2);
    assertThat(err.toString()).contains("--warm must be between 0ms and 1h; was 2h");
  }
}
