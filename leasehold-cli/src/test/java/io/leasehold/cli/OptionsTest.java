package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The command line's options and exit codes; nothing here runs a demo. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class OptionsTest {

  @ParameterizedTest(name = "{0} {1} -> {2}")
  @CsvSource(
      delimiter = '|',
      value = {
        "demo | --contenders=1     | --contenders must be between 2 and 9; was 1",
        "demo | --contenders=10    | --contenders must be between 2 and 9; was 10",
        "demo | --ttl=10ms         | --ttl must be between 200ms and 1m; was 10ms",
        "demo | --ttl=2m           | --ttl must be between 200ms and 1m; was 2m",
        "demo | --duration=1s      | --duration must be between 2s and 1h; was 1s",
        "demo | --duration=5s      | --duration must be at least 3 times --ttl (6s with --ttl 2s)",
        "demo | --ttl=2x           | Invalid value for option '--ttl': '2x' is not a duration",
        "demo | --duration=15      | Invalid value for option '--duration': '15' is not a duration",
        "demo | --contenders=three | Invalid value for option '--contenders'",
        "dev  | --ttl=10ms         | --ttl must be between 200ms and 1m; was 10ms",
      })
  void aBadValueIsABadUsageThatNamesTheOption(String command, String option, String message) {
    Cli run = Cli.run(command, option);

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains(message)
        .contains("Try 'leasehold " + command + " --help' for more information.");
    assertThat(run.out()).isEmpty();
  }

  @Test
  void devChecksItsOptionsBeforeSayingAnything() {
    Cli run = Cli.run("dev", "--contenders=1");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).doesNotContain("not built yet");
  }

  @Test
  void anUnknownOptionIsABadUsage() {
    Cli run = Cli.run("demo", "--contendres=3");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("Unknown option: '--contendres=3'");
  }

  @Test
  void anUnknownCommandIsABadUsage() {
    Cli run = Cli.run("dmeo");

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err())
        .contains("Unmatched argument at index 0: 'dmeo'")
        .contains("Try 'leasehold --help' for more information.");
  }

  @Test
  void noCommandPrintsTheUsageAsAnError() {
    Cli run = Cli.run();

    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("Usage: leasehold").contains("demo").contains("dev");
  }

  @Test
  void helpAndVersionSucceed() {
    Cli help = Cli.run("--help");
    Cli demoHelp = Cli.run("demo", "--help");
    Cli version = Cli.run("--version");

    assertThat(help.exitCode()).isZero();
    assertThat(help.out()).contains("Usage: leasehold").contains("--verbose");
    assertThat(demoHelp.exitCode()).isZero();
    assertThat(demoHelp.out()).contains("--contenders=N", "--ttl=DURATION", "--duration", "--seed");
    assertThat(version.exitCode()).isZero();
    assertThat(version.out().strip()).matches("leasehold \\d+\\.\\d+\\.\\d+.*");
  }
}
