package io.leasehold.testkit;

import io.leasehold.Ticker;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * How the contract suite lets time pass. On virtual time it advances the clock in small steps,
 * running timers as they fall due; on real time it polls with Awaitility. Either way it never
 * sleeps a fixed amount, and every wait is bounded.
 */
public interface TimeControl {

  /** {@return the monotonic clock that the leases under test measure deadlines with} */
  Ticker ticker();

  /**
   * Lets {@code duration} pass on {@link #ticker()}.
   *
   * @param duration how long
   */
  void pass(Duration duration);

  /**
   * Lets time pass until {@code condition} holds.
   *
   * @param what the condition, for the failure message
   * @param atMost how long to let pass before failing
   * @param condition checked between steps
   * @throws AssertionError if it does not hold within {@code atMost}
   */
  void awaitUntil(String what, Duration atMost, BooleanSupplier condition);

  /**
   * Lets time pass until {@code future} is done, normally or not.
   *
   * @param future the future
   * @param atMost how long to let pass before failing
   * @throws AssertionError if it is not done within {@code atMost}
   */
  default void awaitDone(CompletableFuture<?> future, Duration atMost) {
    awaitUntil("the operation completes", atMost, future::isDone);
  }

  /**
   * Real time: the JVM's clock, polled every few milliseconds.
   *
   * @return the time control
   */
  static TimeControl realTime() {
    return new RealTime(Duration.ofMillis(2));
  }

  /**
   * Virtual time that the caller's clock advances.
   *
   * @param ticker the virtual clock's reading
   * @param advance moves the virtual clock forward, running what falls due
   * @param step how far to move between two checks of a condition
   * @return the time control
   */
  static TimeControl virtual(Ticker ticker, Consumer<Duration> advance, Duration step) {
    return new VirtualTime(ticker, advance, step);
  }

  /** Real time, with Awaitility. */
  final class RealTime implements TimeControl {
    private final Duration poll;

    private RealTime(Duration poll) {
      this.poll = poll;
    }

    @Override
    public Ticker ticker() {
      return Ticker.system();
    }

    @Override
    public void pass(Duration duration) {
      long start = System.nanoTime();
      long nanos = duration.toNanos();
      awaitUntil(
          duration + " to pass",
          duration.multipliedBy(2).plusSeconds(5),
          () -> System.nanoTime() - start >= nanos);
    }

    @Override
    public void awaitDone(CompletableFuture<?> future, Duration atMost) {
      try {
        future.get(atMost.toNanos(), TimeUnit.NANOSECONDS);
      } catch (ExecutionException | CancellationException done) {
        // done, exceptionally: the caller looks at how
      } catch (TimeoutException e) {
        throw new AssertionError("expected the operation to complete within " + atMost, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for the operation", e);
      }
    }

    @Override
    public void awaitUntil(String what, Duration atMost, BooleanSupplier condition) {
      try {
        Awaitility.await(what)
            .atMost(atMost)
            .pollDelay(Duration.ZERO)
            .pollInterval(poll)
            .until(condition::getAsBoolean);
      } catch (ConditionTimeoutException e) {
        throw new AssertionError("expected within " + atMost + ": " + what, e);
      }
    }
  }

  /** Virtual time, advanced in steps. */
  final class VirtualTime implements TimeControl {
    private final Ticker ticker;
    private final Consumer<Duration> advance;
    private final Duration step;

    private VirtualTime(Ticker ticker, Consumer<Duration> advance, Duration step) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      this.advance = Objects.requireNonNull(advance, "advance");
      this.step = Objects.requireNonNull(step, "step");
    }

    @Override
    public Ticker ticker() {
      return ticker;
    }

    @Override
    public void pass(Duration duration) {
      advance.accept(duration);
    }

    @Override
    public void awaitUntil(String what, Duration atMost, BooleanSupplier condition) {
      long start = ticker.read();
      long limit = atMost.toNanos();
      advance.accept(Duration.ZERO);
      while (!condition.getAsBoolean()) {
        if (ticker.read() - start >= limit) {
          throw new AssertionError(
              "expected within " + atMost + " of virtual time: " + what);
        }
        advance.accept(step);
      }
    }
  }
}
