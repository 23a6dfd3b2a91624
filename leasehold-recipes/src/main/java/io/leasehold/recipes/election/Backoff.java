package io.leasehold.recipes.election;

import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * Exponential backoff with jitter: after {@code n} failures in a row the delay is drawn uniformly
 * from {@code [d/2, d]} with {@code d = min(max, initial × 2^n)}. The jitter keeps contenders that
 * failed together from retrying together. Not thread-safe on its own; callers hold a lock.
 */
final class Backoff {

  private final long initialNanos;
  private final long maxNanos;
  private final RandomGenerator random;
  private int failures;

  Backoff(Duration initial, Duration max, RandomGenerator random) {
    this.initialNanos = initial.toNanos();
    this.maxNanos = max.toNanos();
    this.random = random;
  }

  /** {@return the delay before the next attempt}, and counts one more failure. */
  long nextDelayNanos() {
    long d = initialNanos;
    for (int i = 0; i < failures && d < maxNanos; i++) {
      d = d > maxNanos / 2 ? maxNanos : d * 2;
    }
    d = Math.min(d, maxNanos);
    if (failures < 62) {
      failures++;
    }
    long half = d / 2;
    return half + (long) (random.nextDouble() * (d - half + 1));
  }

  /** Starts over from the initial delay: an attempt succeeded. */
  void reset() {
    failures = 0;
  }
}
