package io.leasehold.cli;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseStoreUnavailableException;
import java.io.PrintWriter;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** What {@code leasehold get}, {@code watch} and {@code members} share: checks, opening, failing. */
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

  /**
   * Says why a call to the store failed, in one line: what went wrong ({@link Errors#describe}: no
   * wrapper class names) and, when the store did not answer, what to check
   * ({@link Backends#unreachableHint}).
   *
   * @return the exit status: {@link ExitStatus#DENIED} when the store refused for want of a
   *     right, else 1
   */
  static int storeFailed(PrintWriter err, String command, String uri, Throwable failure) {
    Throwable cause = Errors.unwrap(failure);
    String message = Errors.describe(cause);
    if (Errors.denied(cause) != null) {
      fail(err, command, message);
      return ExitStatus.DENIED; // a refusal, definite: no hint about reaching the store
    }
    if (Errors.tlsProblem(cause) != null) {
      return fail(err, command, message); // the reason says what to change; no guesses after it
    }
    boolean unanswered = cause instanceof LeaseStoreUnavailableException || Errors.isNetwork(cause);
    return fail(err, command, unanswered ? message + ". " + Backends.unreachableHint(uri) : message);
  }

  /** Says that the store gave no answer in time, and what to check; {@return 1, the exit status} */
  static int noAnswer(PrintWriter err, String command, String uri, Duration timeout) {
    return fail(
        err, command,
        "no answer from " + uri + " within " + Durations.format(timeout) + ". " + Backends.unreachableHint(uri));
  }

  static int fail(PrintWriter err, String command, String message) {
    err.println("leasehold " + command + ": " + message);
    err.flush();
    return 1;
  }
}
