package io.leasehold;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;

/** Human-readable durations for messages ("500 ms", "1.5 s", "24 h"); package-private. */
final class Format {

  private Format() {}

  static String duration(Duration d) {
    long nanos;
    try {
      nanos = d.toNanos();
    } catch (ArithmeticException tooLong) {
      return d.toString();
    }
    long abs = Math.abs(nanos);
    if (abs >= 3_600_000_000_000L) {
      return scaled(nanos, 3_600_000_000_000L, "h");
    } else if (abs >= 60_000_000_000L) {
      return scaled(nanos, 60_000_000_000L, "min");
    } else if (abs >= 1_000_000_000L) {
      return scaled(nanos, 1_000_000_000L, "s");
    } else if (abs >= 1_000_000L) {
      return scaled(nanos, 1_000_000L, "ms");
    } else if (abs >= 1_000L) {
      return scaled(nanos, 1_000L, "µs");
    }
    return nanos + " ns";
  }

  private static String scaled(long nanos, long unit, String suffix) {
    BigDecimal value =
        BigDecimal.valueOf(nanos)
            .divide(BigDecimal.valueOf(unit), 3, RoundingMode.HALF_EVEN)
            .stripTrailingZeros();
    return value.toPlainString() + " " + suffix;
  }
}
