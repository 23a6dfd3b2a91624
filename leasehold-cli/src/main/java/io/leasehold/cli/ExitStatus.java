package io.leasehold.cli;

/**
 * The exit statuses of every {@code leasehold} command, in one place (docs/cli.md lists them).
 * The numbers above 2 are those of {@code sysexits.h}, as scripts and cron wrappers expect.
 */
final class ExitStatus {

  /** It worked. */
  static final int OK = 0;

  /** It failed: a check failed, nobody held the lease to revoke, a node could not start, an unsafe demo run. */
  static final int FAILURE = 1;

  /** Bad usage: an unknown command or flag, a flag's value out of range, a malformed URI. */
  static final int USAGE = 2;

  /** The lease store could not be reached (EX_UNAVAILABLE). */
  static final int UNAVAILABLE = 69;

  /**
   * The store refused the call for want of a right (EX_NOPERM): definite, so not retried; the
   * message names the identity, the right and the lease or prefix.
   */
  static final int DENIED = 77;

  /** {@code run}: the lease was lost while the command ran, and the command was stopped (EX_SOFTWARE). */
  static final int LOST = 70;

  /** {@code run}: the lease is held elsewhere, or {@code --timeout} passed (EX_TEMPFAIL): try again later. */
  static final int TEMPORARY = 75;

  /** {@code run}: the command could not be started, as a shell reports it. */
  static final int CANNOT_RUN = 127;

  /** Stopped by Ctrl-C or SIGTERM before it could finish. */
  static final int INTERRUPTED = 130;

  private ExitStatus() {}
}
