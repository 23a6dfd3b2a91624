package io.leasehold.bench;

import java.util.Locale;

/**
 * One measured number.
 *
 * @param key its name in the JSON file, stable across runs
 * @param label its name in the table
 * @param value the number; {@link Double#NaN} when it could not be measured in this run
 * @param unit {@code ms}, {@code /s}, {@code B}, {@code cores}, {@code s}, or empty for a count
 */
record Figure(String key, String label, double value, String unit) {

  /** {@return whether the value was measured} */
  boolean measured() {
    return !Double.isNaN(value);
  }

  /** {@return the value as the table shows it, without its unit} */
  String formatted() {
    return format(value, unit);
  }

  static String format(double value, String unit) {
    if (Double.isNaN(value)) {
      return "n/a";
    }
    if (Double.isInfinite(value)) {
      return value > 0 ? "inf" : "-inf";
    }
    double abs = Math.abs(value);
    if (unit.isEmpty() || unit.equals("/s") || unit.equals("B")) {
      return abs >= 100 || value == Math.rint(value)
          ? String.format(Locale.ROOT, "%,.0f", value)
          : String.format(Locale.ROOT, "%.2f", value);
    }
    if (abs >= 1000) {
      return String.format(Locale.ROOT, "%,.0f", value);
    }
    if (abs >= 100) {
      return String.format(Locale.ROOT, "%.1f", value);
    }
    if (abs >= 1 || abs == 0) {
      return String.format(Locale.ROOT, "%.2f", value);
    }
    return new java.math.BigDecimal(value).round(new java.math.MathContext(3)).toPlainString();
  }
}
