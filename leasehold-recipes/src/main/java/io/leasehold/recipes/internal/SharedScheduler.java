package io.leasehold.recipes.internal;

import io.leasehold.Scheduler;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Not API (this package is not exported): shared by the recipes of the other packages.
 *
 * <p>The recipes' default {@link Scheduler}: one daemon thread, {@code leasehold-recipes}, started on
 * first use and shared by every recipe of this JVM, on {@link System#nanoTime()}. Tests pass a
 * virtual one instead (the SPI's {@code VirtualClock}).
 */
public final class SharedScheduler implements Scheduler {

  /** The one instance. */
  public static final SharedScheduler INSTANCE = new SharedScheduler();

  private final ScheduledThreadPoolExecutor executor;

  private SharedScheduler() {
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
  public Cancellable schedule(Runnable task, long delayNanos) {
    Objects.requireNonNull(task, "task");
    ScheduledFuture<?> f = executor.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
    return () -> f.cancel(false);
  }
}
