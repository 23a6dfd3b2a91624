package io.leasehold.bench;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The phases of one run on the monotonic clock: warm-up, then measurement, then over. Operations
 * that complete during warm-up or after the end are left out of every figure.
 */
final class MeasureWindow {

  private final long start;
  private final long measureFrom;
  private final long measureUntil;

  private MeasureWindow(long start, Duration warmup, Duration duration) {
    this.start = start;
    this.measureFrom = start + warmup.toNanos();
    this.measureUntil = measureFrom + duration.toNanos();
  }

  /** {@return a window that starts now} */
  static MeasureWindow startingNow(Duration warmup, Duration duration) {
    return new MeasureWindow(System.nanoTime(), warmup, duration);
  }

  /** {@return whether an operation that completed at {@code nanos} counts} */
  boolean measures(long nanos) {
    return nanos - measureFrom >= 0 && nanos - measureUntil < 0;
  }

  /** {@return whether the run is over at {@code nanos}} */
  boolean over(long nanos) {
    return nanos - measureUntil >= 0;
  }

  /** {@return whether the run is over now} */
  boolean over() {
    return over(System.nanoTime());
  }

  /** {@return the length of the measured part in seconds} */
  double seconds() {
    return (measureUntil - measureFrom) / 1e9;
  }

  /** {@return when measuring starts, on {@link System#nanoTime()}} */
  long measureFrom() {
    return measureFrom;
  }

  /** {@return when the run ends, on {@link System#nanoTime()}} */
  long measureUntil() {
    return measureUntil;
  }

  /** {@return when the run started, on {@link System#nanoTime()}} */
  long start() {
    return start;
  }

  /** Sleeps until {@code nanos} on {@link System#nanoTime()}; at once if that has passed. */
  static void sleepUntil(long nanos) throws InterruptedException {
    long wait;
    while ((wait = nanos - System.nanoTime()) > 0) {
      TimeUnit.NANOSECONDS.sleep(wait);
    }
  }
}
