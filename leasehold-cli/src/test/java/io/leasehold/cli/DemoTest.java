package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Runs the demo end to end, in real time, in this JVM; about six seconds in all. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
@Tag("integration")
class DemoTest {

  @Test
  void aShortDemoSurvivesAPauseAPartitionAndACrashSafely() {
    Cli run = Cli.run("demo", "--ttl", "300ms", "--duration", "4s", "--seed", "7");

    assertThat(run.exitCode()).as(run.out()).isZero();
    assertThat(run.out())
        .contains("--- pausing node-")
        .contains("(simulated GC stall")
        .contains("--- cutting node-")
        .contains("--- healing the partition")
        .contains("--- crashing node-")
        .contains("faults injected: 3")
        .contains("overlapping tenures: 0")
        .contains("tokens strictly increasing: yes")
        .contains("verdict: SAFE");
    assertThat(count("handovers: (\\d+)", run.out())).as(run.out()).isGreaterThanOrEqualTo(1);
    assertThat(run.out())
        .as("the paused leader's write that slipped past checkAlive(), then its loss")
        .containsPattern("REJECTED +stale write with token \\d+: the register has seen token")
        .containsPattern("lost +'demo-singleton' +token \\d+ +EXPIRED")
        .contains("leader work: checkAlive() is false");
  }

  private static int count(String regex, String text) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("'%s' in:%n%s", regex, text).isTrue();
    return Integer.parseInt(m.group(1));
  }
}
