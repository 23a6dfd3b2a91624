package io.leasehold.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;

/**
 * A measured window second by second: cycles completed and acquire latency in each whole second
 * from the window's start, so that what a cold JVM does in its first seconds is seen beside the
 * window's totals. Recorded from the futures' callbacks without locks; read once the run is over.
 */
final class Timeline {

  private final int seconds;
  private final LongAdder[] cycles;
  private final Latency[] acquire;
  private volatile long start;

  /** A timeline of {@code window} rounded up to whole seconds. */
  Timeline(Duration window) {
    this.seconds = (int) Math.max(1, (window.toMillis() + 999) / 1000);
    this.cycles = new LongAdder[seconds];
    this.acquire = new Latency[seconds];
    for (int i = 0; i < seconds; i++) {
      cycles[i] = new LongAdder();
      acquire[i] = new Latency();
    }
  }

  /** Second 1 begins at {@code nanos} on {@link System#nanoTime()}. */
  void startAt(long nanos) {
    this.start = nanos;
  }

  /** {@return the second (0-based) that {@code nanos} falls in, or -1 outside the timeline} */
  int second(long nanos) {
    long offset = nanos - start;
    if (offset < 0) {
      return -1;
    }
    long s = offset / 1_000_000_000L;
    return s < seconds ? (int) s : -1;
  }

  /** An acquire that completed {@code true} at {@code nanos} after {@code tookNanos}. */
  void acquired(long nanos, long tookNanos) {
    int s = second(nanos);
    if (s >= 0) {
      acquire[s].record(tookNanos);
    }
  }

  /** A cycle whose release completed at {@code nanos}. */
  void cycled(long nanos) {
    int s = second(nanos);
    if (s >= 0) {
      cycles[s].increment();
    }
  }

  /** {@return the cycles counted in each second, in order} */
  long[] cyclesPerSecond() {
    long[] out = new long[seconds];
    for (int i = 0; i < seconds; i++) {
      out[i] = cycles[i].sum();
    }
    return out;
  }

  /** {@return the acquire p99 of each second in ms, NaN for a second without one} */
  double[] acquireP99PerSecond() {
    double[] out = new double[seconds];
    for (int i = 0; i < seconds; i++) {
      Histogram h = acquire[i].histogram();
      out[i] = h.getTotalCount() == 0 ? Double.NaN : Latency.ms(h.getValueAtPercentile(99));
    }
    return out;
  }

  /**
   * Adds the per-second rows to {@code r}'s details ({@code per_second}: each second's cycles,
   * which are its rate per second, and its acquire p50 and p99).
   */
  void addTo(Result r) {
    List<Map<String, Object>> rows = new ArrayList<>();
    for (int i = 0; i < seconds; i++) {
      Histogram h = acquire[i].histogram();
      boolean empty = h.getTotalCount() == 0;
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("second", i + 1);
      row.put("cycles", cycles[i].sum());
      row.put("acquire_p50_ms", empty ? null : Latency.ms(h.getValueAtPercentile(50)));
      row.put("acquire_p99_ms", empty ? null : Latency.ms(h.getValueAtPercentile(99)));
      rows.add(row);
    }
    r.detail("per_second", rows);
  }
}
