package io.leasehold.bench;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * A latency distribution, recorded in nanoseconds from any thread without locks (HdrHistogram's
 * {@link Recorder}, auto-resizing, 3 significant digits) and reported in milliseconds.
 */
final class Latency {

  private final Recorder recorder = new Recorder(3);
  private Histogram taken;

  /** Records one operation that took {@code nanos}. */
  void record(long nanos) {
    recorder.recordValue(Math.max(0, nanos));
  }

  /** {@return everything recorded so far; later records are not included} */
  synchronized Histogram histogram() {
    if (taken == null) {
      taken = recorder.getIntervalHistogram();
    } else {
      taken.add(recorder.getIntervalHistogram());
    }
    return taken.copy();
  }

  /**
   * Adds {@code <key>_count}, {@code _p50_ms}, {@code _p95_ms}, {@code _p99_ms}, {@code _p999_ms}
   * and {@code _max_ms} to {@code result}.
   *
   * @param label how the table names the operation, for example "acquire latency"
   */
  void addTo(Result result, String key, String label) {
    addTo(result, key, label, histogram());
  }

  static void addTo(Result result, String key, String label, Histogram h) {
    boolean empty = h.getTotalCount() == 0;
    result.figure(key + "_count", label + ": operations measured", h.getTotalCount(), "");
    result.figure(key + "_p50_ms", label + " p50", empty ? Double.NaN : ms(h.getValueAtPercentile(50)), "ms");
    result.figure(key + "_p95_ms", label + " p95", empty ? Double.NaN : ms(h.getValueAtPercentile(95)), "ms");
    result.figure(key + "_p99_ms", label + " p99", empty ? Double.NaN : ms(h.getValueAtPercentile(99)), "ms");
    result.figure(key + "_p999_ms", label + " p99.9", empty ? Double.NaN : ms(h.getValueAtPercentile(99.9)), "ms");
    result.figure(key + "_max_ms", label + " max", empty ? Double.NaN : ms(h.getMaxValue()), "ms");
  }

  static double ms(long nanos) {
    return nanos / 1e6;
  }
}
