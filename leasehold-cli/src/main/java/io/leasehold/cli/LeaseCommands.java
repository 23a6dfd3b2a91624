package io.leasehold.cli;

import io.leasehold.LeaseBackend;
import java.io.PrintWriter;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** What {@code leasehold get} and {@code leasehold watch} share: checks, opening, failing. */
final class LeaseCommands {

  static final int MAX_NAME_CHARS = 256;
  static final Duration MIN_TIMEOUT = Duration.ofMillis(100);
  static final Duration MAX_TIMEOUT = Duration.ofMinutes(1);

  private LeaseCommands() {}

  static void checkName(CommandSpec spec, String name) {
    if (name.isBlank() || name.length() > MAX_NAME_CHARS) {
      throw new ParameterException(
          spec.commandLine(), "NAME must be 1 to " + MAX_NAME_CHARS + " characters, not blank; was " + name.length());
    }
  }

  static void checkTimeout(CommandSpec spec, Duration timeout) {
    if (timeout.compareTo(MIN_TIMEOUT) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
      throw new ParameterException(
          spec.commandLine(),
          "--timeout must be between " + Durations.format(MIN_TIMEOUT) + " and " + Durations.format(MAX_TIMEOUT)
              + "; was " + Durations.format(timeout));
    }
  }

  /** Opens the backend; a URI it rejects is bad usage, naming where the URI came from. */
  static LeaseBackend open(CommandSpec spec, String uri, boolean fromOption) {
    try {
      return LeaseBackend.open(uri);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          spec.commandLine(), (fromOption ? "--backend" : "$" + Backends.ENV) + ": " + e.getMessage());
    }
  }

  static int fail(PrintWriter err, String command, String message) {
    err.println("leasehold " + command + ": " + message);
    err.flush();
    return 1;
  }
}
