package io.leasehold.cli;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Keeps a command in the foreground until it is asked to stop: by Ctrl-C or {@code SIGTERM} (a
 * JVM shutdown hook), by an interrupt of the command's thread, or when an optional duration has
 * passed. The hook waits for the command to finish cleaning up, because the JVM halts as soon as
 * its hooks return; so close this only after whatever it guards has stopped.
 *
 * <pre>{@code
 * try (Foreground fg = new Foreground(); LocalCluster cluster = ...) {   // cluster closes first
 *   fg.await(duration);
 * }
 * }</pre>
 */
final class Foreground implements AutoCloseable {

  /** How long the shutdown hook waits for the clean-up before letting the JVM halt anyway. */
  private static final Duration CLEANUP_LIMIT = Duration.ofSeconds(20);

  /** Why {@link #await} returned. */
  enum Reason {
    /** The duration passed. */
    DURATION,
    /** Ctrl-C, {@code SIGTERM} or another JVM shutdown. */
    SIGNAL,
    /** The command's thread was interrupted. */
    INTERRUPT
  }

  private final CountDownLatch stopRequested = new CountDownLatch(1);
  private final CountDownLatch cleanedUp = new CountDownLatch(1);
  private final Thread hook = new Thread(this::onShutdown, "leasehold-shutdown");
  private volatile boolean interrupted;

  Foreground() {
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /**
   * Waits until a stop is asked for, or {@code duration} (if not null) has passed. An interrupt
   * counts as a request to stop: it is remembered and restored by {@link #close()}, so the clean-up
   * in between runs on a thread that is not interrupted.
   *
   * @param duration how long at most, or null to wait for a signal
   * @return why it returned
   */
  Reason await(Duration duration) {
    try {
      if (duration == null) {
        stopRequested.await();
        return Reason.SIGNAL;
      }
      return stopRequested.await(duration.toNanos(), TimeUnit.NANOSECONDS)
          ? Reason.SIGNAL
          : Reason.DURATION;
    } catch (InterruptedException e) {
      interrupted = true;
      return Reason.INTERRUPT;
    }
  }

  /** Ends {@link #await} as a signal would, from any thread: what it guards must stop by itself. */
  void wake() {
    stopRequested.countDown();
  }

  private void onShutdown() {
    stopRequested.countDown();
    try {
      cleanedUp.await(CLEANUP_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The clean-up is done: lets a pending shutdown go on, and removes the hook. */
  @Override
  public void close() {
    cleanedUp.countDown();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shutdownUnderWay) {
      // The hook is running (or has run); it returns now that the clean-up is done.
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
