package io.leasehold;

import java.util.concurrent.Executor;

/**
 * Runs short timed tasks: a backend's renewals, deadline checks, retries and timeouts, and the
 * recipes' backoffs and listener calls. One time type for the whole library: its delays run on the
 * clock of the {@link Ticker} it is paired with, so one virtual clock (the SPI's {@code
 * VirtualClock} implements both) drives a backend's leases and the recipes built on them in tests.
 *
 * <p>Tasks must be short and never block; they may share one thread. After a scheduler is shut
 * down, new tasks are dropped rather than rejected, so a late store reply cannot fail on it.
 */
@FunctionalInterface
public interface Scheduler extends Executor {

  /**
   * Runs {@code task} once after {@code delayNanos}.
   *
   * @param task what to run
   * @param delayNanos how long to wait first; zero or less runs it as soon as possible
   * @return a handle to cancel the task
   */
  Cancellable schedule(Runnable task, long delayNanos);

  /** Runs {@code task} as soon as possible on the scheduler's thread. */
  @Override
  default void execute(Runnable task) {
    schedule(task, 0);
  }

  /** A scheduled task that can still be cancelled. */
  @FunctionalInterface
  interface Cancellable {
    /** A handle with nothing to cancel. */
    Cancellable NONE = () -> {};

    /** Prevents the task from running if it has not started; idempotent. */
    void cancel();
  }
}
