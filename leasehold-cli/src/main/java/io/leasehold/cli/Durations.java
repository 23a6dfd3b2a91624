package io.leasehold.cli;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The durations the command line reads and prints: a number and a unit, {@code ms}, {@code s},
 * {@code m} or {@code h}, optionally combined: {@code 500ms}, {@code 2s}, {@code 1.5s}, {@code 1m},
 * {@code 1m30s}. Public for the tools built on the command line ({@code leasehold bench},
 * {@code leasehold faults}), so every Leasehold command reads and prints durations alike.
 */
public final class Durations {

  private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)");
  private static final BigDecimal NANOS_PER_MILLI = BigDecimal.valueOf(1_000_000L);

  private Durations() {}

  /**
   * Parses a duration written as above; case and surrounding white space do not matter.
   *
   * @throws IllegalArgumentException if {@code text} is not of that form, is finer than a
   *     nanosecond, or does not fit in a {@link Duration} of nanoseconds
   */
  public static Duration parse(String text) {
    String s = text.strip().toLowerCase(Locale.ROOT);
    Matcher m = PART.matcher(s);
    BigDecimal nanos = BigDecimal.ZERO;
    int pos = 0;
    while (pos < s.length()) {
      m.region(pos, s.length());
      if (!m.lookingAt()) {
        throw notADuration(text);
      }
      nanos = nanos.add(new BigDecimal(m.group(1)).multiply(unitNanos(m.group(2))));
      pos = m.end();
    }
    if (pos == 0) {
      throw notADuration(text);
    }
    try {
      return Duration.ofNanos(nanos.longValueExact());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "'" + text + "' is finer than a nanosecond or too long for a duration", e);
    }
  }

  /**
   * Formats a duration the way {@link #parse} reads it, to the millisecond (finer only below one):
   * 200ms, 1.5s, 1m30s.
   */
  public static String format(Duration d) {
    long ms = d.toMillis();
    if (ms == 0) {
      return BigDecimal.valueOf(d.toNanos(), 6).stripTrailingZeros().toPlainString() + "ms";
    }
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

  /** Seconds with one decimal, as the timeline shows fault lengths: {@code 4.0s}. */
  static String seconds(Duration d) {
    return String.format(Locale.ROOT, "%.1fs", d.toNanos() / 1e9);
  }

  private static BigDecimal unitNanos(String unit) {
    return switch (unit) {
      case "ms" -> NANOS_PER_MILLI;
      case "s" -> BigDecimal.valueOf(1_000_000_000L);
      case "m" -> BigDecimal.valueOf(60_000_000_000L);
      default -> BigDecimal.valueOf(3_600_000_000_000L);
    };
  }

  private static IllegalArgumentException notADuration(String text) {
    return new IllegalArgumentException(
        "'" + text + "' is not a duration; write a number and a unit, for example 500ms, 2s,"
            + " 1.5s, 1m or 1m30s");
  }

  /**
   * Checks a duration flag against its range.
   *
   * @throws picocli.CommandLine.ParameterException naming the flag, the range and the value
   */
  static void requireBetween(picocli.CommandLine cmd, String flag, Duration value, Duration min, Duration max) {
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new picocli.CommandLine.ParameterException(
          cmd, flag + " must be between " + format(min) + " and " + format(max) + "; was " + format(value));
    }
  }
}
