package io.leasehold;

/** {@link System#nanoTime()} as a {@link Ticker}; an enum so the JIT sees a single implementation. */
enum SystemTicker implements Ticker {
  INSTANCE;

  @Override
  public long read() {
    return System.nanoTime();
  }
}
