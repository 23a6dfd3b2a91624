package io.leasehold.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * One figure over several rounds: the median and the range. NaN values (a round where the figure
 * could not be measured) are left out and not counted.
 *
 * @param median the middle value; for an even count the mean of the two middle ones
 * @param min the least value
 * @param max the greatest value
 * @param n how many values
 */
record Spread(double median, double min, double max, int n) {

  static final Spread NONE = new Spread(Double.NaN, Double.NaN, Double.NaN, 0);

  static Spread of(Collection<Double> values) {
    List<Double> v = sorted(values);
    int n = v.size();
    if (n == 0) {
      return NONE;
    }
    double median = n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    return new Spread(median, v.get(0), v.get(n - 1), n);
  }

  /**
   * {@return the {@code p}th percentile (0 to 100) by nearest rank: the least value with at least
   * p% of the values at or below it; NaN for none} With 50 values, p99 is the greatest.
   */
  static double percentile(Collection<Double> values, double p) {
    List<Double> v = sorted(values);
    if (v.isEmpty()) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(p / 100 * v.size());
    return v.get(Math.max(0, Math.min(v.size(), rank) - 1));
  }

  private static List<Double> sorted(Collection<Double> values) {
    List<Double> v = new ArrayList<>();
    for (Double d : values) {
      if (d != null && !d.isNaN()) {
        v.add(d);
      }
    }
    v.sort(null);
    return v;
  }

  /** {@return "median (min..max)", or the median alone when every value was the same; "n/a" for none} */
  String format(String unit) {
    if (n == 0) {
      return "n/a";
    }
    String m = Figure.format(median, unit);
    String lo = Figure.format(min, unit);
    String hi = Figure.format(max, unit);
    return n == 1 || lo.equals(hi) ? m : m + " (" + lo + ".." + hi + ")";
  }
}
