package io.leasehold.recipes;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where the recipes run their own short tasks: retries after a backoff, and listener calls. Tests
 * inject one on virtual time (a lambda over the test's clock) so that no test sleeps; the default,
 * {@link #system()}, is one shared daemon thread.
 *
 * <p>Tasks must be short and must not block.
 */
@FunctionalInterface
public interface RecipeScheduler extends Executor {

  /**
   * Runs {@code task} once after {@code delayNanos}.
   *
   * @param task what to run
   * @param delayNanos how long to wait first; zero or less runs it as soon as possible
   * @return cancels the task if it has not started; idempotent
   */
  Runnable schedule(Runnable task, long delayNanos);

  /** Runs {@code task} as soon as possible, on the scheduler's thread. */
  @Override
  default void execute(Runnable task) {
    schedule(task, 0);
  }

  /** {@return one daemon thread, {@code leasehold-recipes}, shared by every recipe of this JVM} */
  static RecipeScheduler system() {
    return SystemRecipeScheduler.INSTANCE;
  }
}

/** The shared default: a single daemon thread, started on first use. */
final class SystemRecipeScheduler implements RecipeScheduler {

  static final SystemRecipeScheduler INSTANCE = new SystemRecipeScheduler();

  private final ScheduledThreadPoolExecutor executor;

  private SystemRecipeScheduler() {
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread t = new Thread(task, "leasehold-recipes");
              t.setDaemon(true);
              return t;
            });
    executor.setRemoveOnCancelPolicy(true);
  }

  @Override
  public Runnable schedule(Runnable task, long delayNanos) {
    Objects.requireNonNull(task, "task");
    ScheduledFuture<?> f = executor.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    return () -> f.cancel(false);
  }
}
