package io.leasehold.spi;

import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * One tenure as this holder lives it: the store's {@link Tenure} plus its local safe deadline. The
 * time-safety rule of the whole library is the handful of methods below, each a compare-and-set
 * on the one {@code deadline} field:
 *
 * <ul>
 *   <li>The tenure is live while the ticker reads before its deadline. Whoever first finds the
 *       deadline passed ({@link #alive()}, from {@code checkAlive()}, a renewal or the deadline
 *       timer) swaps it for {@link #ENDED} and reports the loss.
 *   <li>{@code ENDED} is final: nothing moves it again, so a tenure once seen dead never comes
 *       back, whatever answer arrives late.
 *   <li>A renewal moves the deadline only later ({@link #extendTo}), never earlier, never back
 *       from {@code ENDED}.
 *   <li>The store's word ends it at once ({@link #endByStore}); the holder's own release ends it
 *       without a loss ({@link #endVoluntarily}), unless the deadline had passed already: then
 *       the loss is reported, never swallowed by the release.
 *   <li>Exactly one caller wins the swap to {@code ENDED}, and only the winner reports: a loss is
 *       reported exactly once, without a lock.
 * </ul>
 *
 * <p>{@link #alive()} is the hot path: a volatile read of the deadline and one ticker read.
 * The remaining fields are the engine's bookkeeping for this tenure, guarded by its lock.
 */
final class Tenancy {

  /** Deadline value of a tenure that is over. No real ticker reading is ever exactly this. */
  static final long ENDED = Long.MIN_VALUE;

  /** Before the first tenure: over, with no tenure. */
  static final Tenancy NONE = new Tenancy(null, ENDED, null, null);

  private static final VarHandle DEADLINE;

  static {
    try {
      DEADLINE = MethodHandles.lookup().findVarHandle(Tenancy.class, "deadline", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Told, exactly once per tenure and by whoever ended it, that a live tenure was lost. */
  interface LossReport {
    void lost(Tenancy tenancy, LeaseLost reason);
  }

  final Tenure tenure;
  private final Ticker ticker;
  private final LossReport report;

  /** The local safe deadline on the ticker, or {@link #ENDED}; changed only by CAS. */
  @SuppressWarnings("unused") // accessed through DEADLINE as well
  private volatile long deadline;

  /** Completes once the handlers of this tenure's loss ran, or at once if it ended otherwise. */
  final CompletableFuture<Void> lossHandled = new CompletableFuture<>();

  // The engine's bookkeeping, guarded by ManagedLease's lock.
  Scheduler.Cancellable renewTimer = Scheduler.Cancellable.NONE;
  Scheduler.Cancellable deadlineTimer = Scheduler.Cancellable.NONE;
  CompletableFuture<Boolean> renewal;

  /**
   * Renewals failed since the last success. Written under the engine's lock; one volatile record
   * so that a loss found by {@link #alive()} can say why, without the lock and without a torn
   * read.
   */
  volatile RenewalFailures failures = RenewalFailures.NONE;

  /** The callback thread while it runs this tenure's loss handlers. */
  volatile Thread notifying;

  /**
   * Begins a tenure.
   *
   * @param tenure what the store granted
   * @param deadline the local safe deadline on {@code ticker} (a reading of exactly {@link
   *     #ENDED} is moved one nanosecond earlier)
   * @param ticker the holder's monotonic clock
   * @param report told of the loss, once
   */
  Tenancy(Tenure tenure, long deadline, Ticker ticker, LossReport report) {
    this.tenure = tenure;
    this.ticker = ticker;
    this.report = report;
    this.deadline = tenure == null || deadline != ENDED ? deadline : deadline - 1;
    if (tenure == null) {
      lossHandled.complete(null);
    }
  }

  /**
   * Whether the tenure is live now. If its deadline has passed, ends it and reports the loss; a
   * {@code false} answer is therefore final.
   */
  boolean alive() {
    for (; ; ) {
      long d = deadline;
      if (d == ENDED) {
        return false;
      }
      if (d - ticker.read() > 0) {
        return true;
      }
      if (DEADLINE.compareAndSet(this, d, ENDED)) {
        report.lost(this, expiredReason());
        return false;
      }
    }
  }

  /** {@return the deadline as it stands, without checking it: {@link #ENDED} once over} */
  long deadline() {
    return deadline;
  }

  /** {@return whether the tenure has ended (a passed deadline not yet noticed counts as live)} */
  boolean isOver() {
    return deadline == ENDED;
  }

  /**
   * Moves the deadline to {@code newDeadline} if that is later, unless the tenure is over or its
   * deadline already passed.
   *
   * @return whether the tenure is still live
   */
  boolean extendTo(long newDeadline) {
    for (; ; ) {
      long d = deadline;
      if (d == ENDED || !alive()) {
        return false;
      }
      long next = newDeadline - d > 0 ? newDeadline : d;
      if (DEADLINE.compareAndSet(this, d, next == ENDED ? next - 1 : next)) {
        return true;
      }
    }
  }

  /** Ends the tenure because the store said so; reports the loss if it was still live. */
  void endByStore(LeaseLost reason) {
    for (; ; ) {
      long d = deadline;
      if (d == ENDED) {
        return;
      }
      if (DEADLINE.compareAndSet(this, d, ENDED)) {
        report.lost(this, reason);
        return;
      }
    }
  }

  /**
   * Ends a live tenure on the holder's own request.
   *
   * @return the deadline it had, or {@link #ENDED} if it was not live (a passed deadline is
   *     reported as a loss, never swallowed by the release)
   */
  long endVoluntarily() {
    for (; ; ) {
      long d = deadline;
      if (d == ENDED || !alive()) {
        return ENDED;
      }
      if (DEADLINE.compareAndSet(this, d, ENDED)) {
        lossHandled.complete(null);
        return d;
      }
    }
  }

  /** {@return the reason of an expiry: the failed renewals, or a hint that none ran in time} */
  LeaseLost expiredReason() {
    RenewalFailures f = failures; // one read: count and message belong together
    String detail =
        "the local safe deadline passed without a successful renewal"
            + (f.count() > 0
                ? " (" + f.count() + " failed attempt(s); the last: " + f.last() + ")"
                : " (the renewal did not run in time: was the process paused or starved?)");
    return new LeaseLost(LeaseLost.Kind.EXPIRED, detail);
  }

  void cancelTimers() {
    renewTimer.cancel();
    deadlineTimer.cancel();
  }

  /** Failed renewals of a tenure and the last failure's message, read and written as one. */
  record RenewalFailures(int count, String last) {
    static final RenewalFailures NONE = new RenewalFailures(0, "");
  }
}
