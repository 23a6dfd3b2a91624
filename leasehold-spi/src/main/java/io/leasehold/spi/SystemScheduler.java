package io.leasehold.spi;

import io.leasehold.Scheduler;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** A {@link Scheduler} on one daemon thread, measured with {@link System#nanoTime()}. */
final class SystemScheduler implements Scheduler, AutoCloseable {

  private final ScheduledThreadPoolExecutor executor;

  SystemScheduler(String threadName) {
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread t = new Thread(task, threadName);
              t.setDaemon(true);
              return t;
            });
    executor.setRemoveOnCancelPolicy(true);
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    try {
      ScheduledFuture<?> f = executor.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
      return () -> f.cancel(false);
    } catch (RejectedExecutionException shutDown) {
      return Cancellable.NONE;
    }
  }

  @Override
  public void close() {
    executor.shutdownNow();
  }
}
