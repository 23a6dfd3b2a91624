package io.leasehold.bench;

import io.leasehold.cli.Durations;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** Range checks of options; a value out of range is bad usage (exit 2) naming the option. */
final class Check {

  private Check() {}

  static void range(CommandSpec spec, String option, int value, int min, int max) {
    if (value < min || value > max) {
      throw new ParameterException(spec.commandLine(),
          String.format("%s must be between %,d and %,d; was %,d", option, min, max, value));
    }
  }

  static void range(CommandSpec spec, String option, Duration value, Duration min, Duration max) {
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new ParameterException(spec.commandLine(),
          option + " must be between " + Durations.format(min) + " and " + Durations.format(max)
              + "; was " + Durations.format(value));
    }
  }

  static ParameterException bad(CommandSpec spec, String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
