package io.leasehold.cli;

import java.time.Duration;

/**
 * What {@code leasehold demo} runs with, checked against the ranges the demo makes sense in.
 * Messages name the command-line option, since that is where the values come from.
 *
 * @param contenders how many simulated processes contend for the lease
 * @param ttl the lease's time-to-live; the leader works every {@code ttl / 8}, faults last
 *     {@code 2 × ttl}
 * @param duration how long the demo runs before it stops by itself
 * @param seed seeds the jitter of the contenders' acquire backoff
 */
record DemoConfig(int contenders, Duration ttl, Duration duration, long seed) {

  static final int MIN_CONTENDERS = 2;
  static final int MAX_CONTENDERS = 9;
  static final Duration MIN_TTL = Duration.ofMillis(200);
  static final Duration MAX_TTL = Duration.ofMinutes(1);
  static final Duration MIN_DURATION = Duration.ofSeconds(2);
  static final Duration MAX_DURATION = Duration.ofHours(1);
  /** The shortest run, in TTLs, that fits one fault and the recovery from it. */
  static final int MIN_DURATION_IN_TTLS = 3;

  /** @throws IllegalArgumentException naming the option, the allowed range and the value given */
  DemoConfig {
    if (contenders < MIN_CONTENDERS || contenders > MAX_CONTENDERS) {
      throw new IllegalArgumentException(
          "--contenders must be between " + MIN_CONTENDERS + " and " + MAX_CONTENDERS + "; was "
              + contenders);
    }
    requireBetween("--ttl", ttl, MIN_TTL, MAX_TTL);
    requireBetween("--duration", duration, MIN_DURATION, MAX_DURATION);
    Duration shortest = ttl.multipliedBy(MIN_DURATION_IN_TTLS);
    if (duration.compareTo(shortest) < 0) {
      throw new IllegalArgumentException(
          "--duration must be at least " + MIN_DURATION_IN_TTLS + " times --ttl ("
              + Durations.format(shortest) + " with --ttl " + Durations.format(ttl)
              + ") so that a fault and the recovery from it fit; was "
              + Durations.format(duration));
    }
  }

  /** {@return how often the leader does its leader-only work} */
  Duration workInterval() {
    return ttl.dividedBy(8);
  }

  /** {@return how long a pause or a partition lasts: long enough for the lease to move on} */
  Duration faultLength() {
    return ttl.multipliedBy(2);
  }

  private static void requireBetween(String option, Duration value, Duration min, Duration max) {
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new IllegalArgumentException(
          option + " must be between " + Durations.format(min) + " and " + Durations.format(max)
              + "; was " + Durations.format(value));
    }
  }
}
