package io.leasehold.bench;

import io.leasehold.Lease;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * Counts renewals from the outside: sweeps every lease's {@link Lease#remaining()} often enough
 * to see each move of its local safe deadline, and counts a move forward as one renewal that
 * reached the holder. A renewal the store answered with an older confirmation (a shared
 * keep-alive that had not moved since the last one) does not move the deadline and is not
 * counted: what counts is how often each lease's safe window was refreshed.
 *
 * <p>Each reading is bracketed by two clock reads; a reading whose bracket is wider than {@link
 * #MAX_BRACKET_NANOS} (the thread was descheduled) is skipped, so a deadline estimate is off by
 * less than that, far below {@link #MIN_ADVANCE_NANOS}.
 */
final class RenewalSampler {

  static final long MAX_BRACKET_NANOS = 100_000;
  static final long MIN_ADVANCE_NANOS = 1_000_000;

  private final Lease[] leases;
  private final long[] deadlines;
  private final boolean[] seen;
  private final long intervalNanos;
  private long advances;
  private long lowestRemainingNanos = Long.MAX_VALUE;
  private long notHeldReadings;
  private long sweeps;
  private long skipped;

  /**
   * @param leases the leases to watch
   * @param heartbeat their renewal interval; the sweep runs four times per interval
   */
  RenewalSampler(Lease[] leases, Duration heartbeat) {
    this.leases = leases;
    this.deadlines = new long[leases.length];
    this.seen = new boolean[leases.length];
    this.intervalNanos = Math.max(20_000_000L, Math.min(500_000_000L, heartbeat.toNanos() / 4));
  }

  /**
   * Sweeps until {@code until} (on {@link System#nanoTime()}); the first sweep only records where
   * each deadline stands.
   */
  void run(long until) {
    sweep(false);
    while (System.nanoTime() - until < 0 && !Thread.currentThread().isInterrupted()) {
      long next = System.nanoTime() + intervalNanos;
      sweep(true);
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(Math.min(wait, Math.max(0, until - System.nanoTime())));
      }
    }
  }

  private void sweep(boolean count) {
    sweeps++;
    for (int i = 0; i < leases.length; i++) {
      Lease lease = leases[i];
      if (lease == null) {
        continue;
      }
      long before = System.nanoTime();
      long remaining = lease.remaining().toNanos();
      long after = System.nanoTime();
      if (after - before > MAX_BRACKET_NANOS) {
        skipped++;
        continue;
      }
      if (remaining <= 0) {
        notHeldReadings++;
        continue;
      }
      if (count && remaining < lowestRemainingNanos) {
        lowestRemainingNanos = remaining;
      }
      long deadline = before + remaining;
      if (!seen[i]) {
        seen[i] = true;
        deadlines[i] = deadline;
      } else if (deadline - deadlines[i] > MIN_ADVANCE_NANOS) {
        if (count) {
          advances++;
        }
        deadlines[i] = deadline;
      }
    }
  }

  long advances() {
    return advances;
  }

  /** {@return the least time left to any lease's deadline seen while counting; -1 if none} */
  long lowestRemainingNanos() {
    return lowestRemainingNanos == Long.MAX_VALUE ? -1 : lowestRemainingNanos;
  }

  long notHeldReadings() {
    return notHeldReadings;
  }

  long sweeps() {
    return sweeps;
  }

  long skipped() {
    return skipped;
  }
}
