package io.leasehold.cli;

/**
 * A command ends with one line on stderr and this exit status: thrown from a command, turned into
 * that line by {@link Main}'s execution exception handler, the one place that does so. Bad flags
 * are a {@link picocli.CommandLine.ParameterException} instead (exit 2 and a pointer to the help).
 */
final class CommandFailure extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final int status;

  /**
   * @param status one of {@link ExitStatus}
   * @param message what went wrong and what to do about it, without the command's name
   */
  CommandFailure(int status, String message) {
    super(message, null, false, false);
    this.status = status;
  }

  int status() {
    return status;
  }
}
