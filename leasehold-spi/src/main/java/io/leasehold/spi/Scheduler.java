package io.leasehold.spi;

import java.util.concurrent.Executor;

/**
 * Runs timed tasks for the leases of one backend: renewals, deadline checks, retries and
 * timeouts. Its delays run on the same clock as the {@link LeaseRuntime#ticker() ticker} it is
 * paired with, so a virtual clock can drive both.
 *
 * <p>Tasks must be short and never block; they share one thread. After the scheduler is shut
 * down, new tasks are dropped rather than rejected, so a late store reply cannot fail on it.
 */
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
