package io.leasehold.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The clock that {@link ClockSkewAgent} puts in place of {@link System#nanoTime()} in the classes
 * it patches: the real monotonic clock, run at a rate that the harness can change while the
 * process runs (1.0: the real clock). Changes keep the clock continuous, so it never jumps; only
 * its rate changes, as a real oscillator that runs fast or slow.
 *
 * <p>The harness sets the rate by writing it to a file that a daemon thread of this class polls
 * every 50 ms; the thread answers in {@code <file>.ack} with the rate it adopted and how many call
 * sites the agent redirected, so the harness can tell that a skew really took effect.
 */
public final class SkewedClock {

  /** The clock from {@code realBase} on: {@code skewedBase + (real - realBase) × rate}. */
  private record Segment(long realBase, long skewedBase, double rate) {}

  private static volatile Segment segment = new Segment(0, 0, 1.0);

  private SkewedClock() {}

  /**
   * What a patched class reads instead of {@link System#nanoTime()}.
   *
   * @return the skewed monotonic clock, in nanoseconds
   */
  public static long nanoTime() {
    long now = System.nanoTime();
    Segment s = segment;
    return s.skewedBase + (long) ((now - s.realBase) * s.rate);
  }

  /** {@return the current rate} */
  static double rate() {
    return segment.rate;
  }

  /** From now on the clock runs at {@code rate}, continuing from where it is. */
  static synchronized void setRate(double rate) {
    if (!(rate > 0) || rate > 10) {
      throw new IllegalArgumentException("clock rate must be in (0, 10]; was " + rate);
    }
    long now = System.nanoTime();
    Segment s = segment;
    segment = new Segment(now, s.skewedBase + (long) ((now - s.realBase) * s.rate), rate);
  }

  /** For tests: the clock reads {@code value} plus {@code rate} × the real time since now. */
  static synchronized void set(long value, double rate) {
    segment = new Segment(System.nanoTime(), value, rate);
  }

  /** Starts the daemon that adopts the rate written to {@code file}. */
  static void follow(Path file, java.util.function.IntSupplier patchedSites) {
    Thread t = new Thread(() -> {
      String last = null;
      while (true) {
        try {
          if (Files.exists(file)) {
            String text = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (!text.isEmpty() && !text.equals(last)) {
              setRate(Double.parseDouble(text));
              last = text;
              Path ack = file.resolveSibling(file.getFileName() + ".ack");
              Path tmp = file.resolveSibling(file.getFileName() + ".ack.tmp");
              Files.writeString(tmp, String.format(Locale.ROOT, "%s %d%n", text, patchedSites.getAsInt()),
                  StandardCharsets.UTF_8);
              Files.move(tmp, ack, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                  java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
          }
        } catch (IOException | RuntimeException e) {
          System.err.println("leasehold-faults clock: cannot adopt the rate in " + file + ": " + e);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
    }, "leasehold-faults-clock");
    t.setDaemon(true);
    t.start();
  }
}
