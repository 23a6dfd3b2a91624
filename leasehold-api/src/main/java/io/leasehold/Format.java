package io.leasehold;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;

/** Human-readable durations for messages ("500 ms", "1.5 s", "61 min"); package-private. */
final class Format {

  private static final long[] UNITS = {
    3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L, 1L
  };
  private static final String[] NAMES = {"h", "min", "s", "ms", "µs", "ns"};

  private Format() {}

  /**
   * The largest unit in which the value is at least 1, if the value is exact to three decimals
   * there; else the next unit down if the value stays below 1000 and is exact there ("61 min");
   * else the first, rounded to three decimals.
   */
  static String duration(Duration d) {
    long nanos;
    try {
      nanos = d.toNanos();
    } catch (ArithmeticException tooLong) {
      return d.toString();
    }
    long abs = Math.abs(nanos);
    int firstFit = UNITS.length - 1;
    for (int i = UNITS.length - 1; i >= 0; i--) {
      if (abs >= UNITS[i]) {
        firstFit = i;
      }
    }
    for (int i = firstFit; i < UNITS.length && (i == firstFit || abs / UNITS[i] < 1000); i++) {
      if (UNITS[i] < 1000 || abs % (UNITS[i] / 1000) == 0) {
        return scaled(nanos, i);
      }
    }
    return scaled(nanos, firstFit);
  }

  private static String scaled(long nanos, int unit) {
    BigDecimal value =
        BigDecimal.valueOf(nanos)
            .divide(BigDecimal.valueOf(UNITS[unit]), 3, RoundingMode.HALF_EVEN)
            .stripTrailingZeros();
    return value.toPlainString() + " " + NAMES[unit];
  }
}
