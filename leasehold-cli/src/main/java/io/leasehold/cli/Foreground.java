package io.leasehold.cli;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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

  /**
   * The exit status of the command line, once its command returned: {@link #exit} sets it. A
   * shutdown hook that waits for it ends the JVM with it, not with the JVM's own 128 + signal
   * (130 for Ctrl-C, 143 for SIGTERM): a stop that was asked for is the command's normal end.
   */
  private static final CompletableFuture<Integer> EXIT_STATUS = new CompletableFuture<>();

  /** Whether this JVM is the command line's own ({@link Main#main}), which {@link #exit} ends. */
  private static volatile boolean ownJvm;

  private final CountDownLatch stopRequested = new CountDownLatch(1);
  private final CountDownLatch cleanedUp = new CountDownLatch(1);
  private final Thread hook = new Thread(this::onShutdown, "leasehold-shutdown");
  private final Thread waiter;
  private volatile boolean interrupted;

  Foreground() {
    this(null);
  }

  /**
   * @param waiter a thread to interrupt when a stop is asked for (a command that waits for
   *     something else than {@link #await}, such as the next event), or null
   */
  private Foreground(Thread waiter) {
    this.waiter = waiter;
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /**
   * {@return a foreground whose stop also interrupts the calling thread}: for a command that
   * blocks on its own queue and ends, with its normal status, when interrupted.
   */
  static Foreground interruptingThisThread() {
    return new Foreground(Thread.currentThread());
  }

  /** Marks this JVM as the command line's own: {@link #exit} ends it. For {@link Main#main}. */
  static void ownTheJvm() {
    ownJvm = true;
  }

  /**
   * Ends the command line's JVM with the command's status. If a signal asked for the stop, a
   * shutdown hook is waiting: it ends the JVM with this status ({@link System#exit} only waits
   * for it then).
   */
  static void exit(int status) {
    EXIT_STATUS.complete(status);
    System.exit(status);
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
    if (waiter != null) {
      waiter.interrupt();
    }
    try {
      long deadline = System.nanoTime() + CLEANUP_LIMIT.toNanos();
      if (cleanedUp.await(CLEANUP_LIMIT.toMillis(), TimeUnit.MILLISECONDS) && ownJvm) {
        // The command cleaned up and returns its status: the JVM ends with it (0 for a stop),
        // as docs/cli.md says, so that systemd and Kubernetes see a clean stop.
        Integer status = EXIT_STATUS.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(status);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // No status in time: the JVM ends as it would have (128 + the signal).
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
