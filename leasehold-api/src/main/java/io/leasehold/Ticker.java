package io.leasehold;

/**
 * A monotonic time source in nanoseconds, as {@link System#nanoTime()}: only differences between
 * two readings mean anything, never the value itself, and it never jumps with wall-clock
 * adjustments. Leases measure every deadline with one. Tests inject a virtual one to advance time
 * without waiting.
 */
@FunctionalInterface
public interface Ticker {

  /**
   * {@return nanoseconds since an arbitrary origin} Compare readings by subtraction, never with
   * {@code <}.
   */
  long read();

  /** {@return the ticker of this JVM: {@link System#nanoTime()}} */
  static Ticker system() {
    return SystemTicker.INSTANCE;
  }
}
