package io.leasehold.spi;

import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The clock and threads that the leases of one backend share: one monotonic ticker, one timer
 * thread for every renewal and deadline (so heartbeat threads do not grow with the number of
 * leases), and one thread for {@link io.leasehold.Lease#onLost} handlers, kept apart so that a slow
 * handler never delays a renewal.
 */
public final class LeaseRuntime implements AutoCloseable {

  private final Ticker ticker;
  private final Scheduler timers;
  private final Executor callbacks;
  private final AutoCloseable owned;

  private LeaseRuntime(Ticker ticker, Scheduler timers, Executor callbacks, AutoCloseable owned) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.timers = Objects.requireNonNull(timers, "timers");
    this.callbacks = Objects.requireNonNull(callbacks, "callbacks");
    this.owned = owned;
  }

  /**
   * A runtime on this JVM's clock with its own two daemon threads, named {@code
   * leasehold-<name>-timer} and {@code leasehold-<name>-callbacks}; {@link #close()} stops them.
   *
   * @param name a short name for the backend, used in thread names
   * @return the runtime
   */
  public static LeaseRuntime system(String name) {
    Objects.requireNonNull(name, "name");
    SystemScheduler timers = new SystemScheduler("leasehold-" + name + "-timer");
    ExecutorService callbacks =
        Executors.newSingleThreadExecutor(
            task -> {
              Thread t = new Thread(task, "leasehold-" + name + "-callbacks");
              t.setDaemon(true);
              return t;
            });
    return new LeaseRuntime(
        Ticker.system(),
        timers,
        callbacks,
        () -> {
          timers.close();
          callbacks.shutdown();
        });
  }

  /**
   * A runtime on clocks and threads the caller owns, such as a virtual clock in tests. The
   * scheduler's delays must run on the same clock as {@code ticker}. {@link #close()} leaves them
   * alone.
   *
   * @param ticker the monotonic clock deadlines are measured with
   * @param timers runs renewals, deadline checks, retries and timeouts
   * @param callbacks runs {@link io.leasehold.Lease#onLost} handlers; must run them later, on
   *     another thread or a later turn of a virtual clock, never on the thread that submits them
   *     (the engine may submit while it holds its lock)
   * @return the runtime
   */
  public static LeaseRuntime of(Ticker ticker, Scheduler timers, Executor callbacks) {
    return new LeaseRuntime(ticker, timers, callbacks, null);
  }

  /** {@return the monotonic clock deadlines are measured with} */
  public Ticker ticker() {
    return ticker;
  }

  /** {@return the scheduler for renewals, deadline checks, retries and timeouts} */
  public Scheduler timers() {
    return timers;
  }

  /** {@return the executor that runs loss handlers} */
  public Executor callbacks() {
    return callbacks;
  }

  /** Stops the threads this runtime made, if it made any. */
  @Override
  public void close() {
    if (owned != null) {
      try {
        owned.close();
      } catch (Exception e) {
        throw new IllegalStateException("could not stop the lease runtime's threads", e);
      }
    }
  }
}
