package io.leasehold.cli;

/**
 * One tenure as its holder lived it, on its own {@link System#nanoTime()} clock: from the moment
 * its {@code acquire()} completed {@code true} until it knew, or must have known, that the lease
 * was gone.
 *
 * <p>The end is the earliest of the moments the holder observed the end (a {@code false}
 * {@code checkAlive()}, its {@code onLost} handler, its own release, its crash) and the lease's
 * local safe deadline as last reported by {@code remaining()}: after that deadline
 * {@code checkAlive()} cannot say {@code true}. The deadline matters for a holder that was paused
 * or busy when it passed: such a holder observes its loss late, but it held the lease only until
 * the deadline. Thread-safe.
 */
final class TenureRecord {

  private final String owner;
  private final long token;
  private final long start;

  // Guarded by this.
  private boolean deadlineKnown;
  private long safeUntil;
  private long end;
  private boolean ended;
  private String endedBy = "";
  private int writes;

  TenureRecord(String owner, long token, long start) {
    this.owner = owner;
    this.token = token;
    this.start = start;
  }

  String owner() {
    return owner;
  }

  long token() {
    return token;
  }

  long start() {
    return start;
  }

  /** Notes that the lease's local safe deadline, seen while it was held, is at least this. */
  synchronized void safeUntil(long deadline) {
    if (!deadlineKnown || deadline - safeUntil > 0) {
      safeUntil = deadline;
      deadlineKnown = true;
    }
  }

  /**
   * Ends the tenure, observed at {@code observedAt}, unless it already ended.
   *
   * @param how what ended it, for the summary
   * @return whether this call ended it
   */
  synchronized boolean end(long observedAt, String how) {
    if (ended) {
      return false;
    }
    ended = true;
    end = deadlineKnown && observedAt - safeUntil > 0 ? safeUntil : observedAt;
    endedBy = how;
    return true;
  }

  synchronized boolean ended() {
    return ended;
  }

  /** {@return when the tenure ended, or {@link Long#MAX_VALUE} while it has not} */
  synchronized long end() {
    return ended ? end : Long.MAX_VALUE;
  }

  synchronized String endedBy() {
    return endedBy;
  }

  synchronized void wrote() {
    writes++;
  }

  synchronized int writes() {
    return writes;
  }
}
