package io.leasehold.bench;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as the bench reads and prints them: a number and a unit ({@code ms}, {@code s},
 * {@code m}, {@code h}), optionally combined, as the {@code leasehold} command writes them:
 * {@code 500ms}, {@code 1.5s}, {@code 2m}, {@code 1m30s}.
 */
final class BenchDurations {

  private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)");

  private BenchDurations() {}

  /**
   * Parses a duration written as above.
   *
   * @throws IllegalArgumentException if the text is not of that form
   */
  static Duration parse(String text) {
    String s = text.strip().toLowerCase(Locale.ROOT);
    Matcher m = PART.matcher(s);
    BigDecimal nanos = BigDecimal.ZERO;
    int pos = 0;
    while (pos < s.length()) {
      m.region(pos, s.length());
      if (!m.lookingAt()) {
        throw notADuration(text);
      }
      nanos = nanos.add(new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(unitNanos(m.group(2)))));
      pos = m.end();
    }
    if (pos == 0) {
      throw notADuration(text);
    }
    try {
      return Duration.ofNanos(nanos.setScale(0, java.math.RoundingMode.HALF_UP).longValueExact());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("'" + text + "' is too long for a duration", e);
    }
  }

  /** Formats a duration the way {@link #parse} reads it: 200ms, 1.5s, 2m, 1m30s. */
  static String format(Duration d) {
    long ms = d.toMillis();
    if (ms < 1_000) {
      return ms + "ms";
    }
    if (ms >= 3_600_000 && ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms >= 60_000) {
      long rest = ms % 60_000;
      return ms / 60_000 + "m" + (rest == 0 ? "" : format(Duration.ofMillis(rest)));
    }
    return BigDecimal.valueOf(ms, 3).stripTrailingZeros().toPlainString() + "s";
  }

  private static long unitNanos(String unit) {
    return switch (unit) {
      case "ms" -> 1_000_000L;
      case "s" -> 1_000_000_000L;
      case "m" -> 60_000_000_000L;
      default -> 3_600_000_000_000L;
    };
  }

  private static IllegalArgumentException notADuration(String text) {
    return new IllegalArgumentException(
        "'" + text + "' is not a duration; write a number and a unit, for example 500ms, 2s, 1.5s,"
            + " 1m or 1m30s");
  }
}
