package io.leasehold.cli;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The options of {@code demo}. */
final class DemoOptions {

  @Spec(Spec.Target.MIXEE)
  private CommandSpec command;

  @Option(
      names = "--contenders",
      paramLabel = "N",
      defaultValue = "3",
      description = "Contending processes, 2 to 9 (default: ${DEFAULT-VALUE}).")
  private int contenders;

  @Option(
      names = "--ttl",
      paramLabel = "DURATION",
      defaultValue = "2s",
      description = {
        "Time-to-live of the lease, 200ms to 1m (default: ${DEFAULT-VALUE}).",
        "The leader works every ttl/8; a pause or partition lasts 2 x ttl."
      })
  private Duration ttl;

  @Option(
      names = "--duration",
      paramLabel = "DURATION",
      defaultValue = "15s",
      description = {
        "How long the demo runs, 2s to 1h and at least 3 x ttl (default: ${DEFAULT-VALUE}).",
        "All three faults fit from 7.5 x ttl."
      })
  private Duration duration;

  @Option(
      names = "--seed",
      paramLabel = "N",
      description = "Seed of the backoff jitter (default: random, printed at the start).")
  private Long seed;

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "Show this help and exit.")
  private boolean help;

  /**
   * {@return the checked configuration}
   *
   * @throws ParameterException naming the option whose value is out of range
   */
  DemoConfig config() {
    try {
      return new DemoConfig(
          contenders,
          ttl,
          duration,
          seed != null ? seed : ThreadLocalRandom.current().nextLong(1_000_000));
    } catch (IllegalArgumentException e) {
      throw new ParameterException(command.commandLine(), e.getMessage());
    }
  }
}
