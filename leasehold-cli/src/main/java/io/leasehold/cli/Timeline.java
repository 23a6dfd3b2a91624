package io.leasehold.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * Prints the demo as it happens, one line per event, each prefixed with the seconds elapsed since
 * the start: {@code [  3.25s] node-2  acquired  'demo-singleton'  token 4}. Thread-safe: every
 * contender, loss handler and the fault script print here, and each line is flushed at once.
 */
final class Timeline {

  private final PrintWriter out;
  private final long origin;

  /**
   * @param out where the timeline goes
   * @param origin the {@link System#nanoTime()} reading that counts as 0.00s
   */
  Timeline(PrintWriter out, long origin) {
    this.out = out;
    this.origin = origin;
  }

  /** {@return {@code nanoTime} as seconds since the start, as the timeline shows them} */
  String at(long nanoTime) {
    return String.format(Locale.ROOT, "%6.2fs", (nanoTime - origin) / 1e9);
  }

  /** An event of one contender: {@code who} did {@code what}, with details. */
  void event(String who, String what, String details) {
    stamped(String.format(Locale.ROOT, "%-6s  %-9s %s", who, what, details));
  }

  /** Something done to the processes from outside: {@code --- pausing node-1 ... ---}. */
  void fault(String text) {
    stamped("--- " + text + " ---");
  }

  /** A line without a time stamp: the header and the summary. */
  synchronized void line(String text) {
    out.println(text);
    out.flush();
  }

  /** Reads the clock under the lock, so that lines from different threads print in time order. */
  private synchronized void stamped(String text) {
    out.println("[" + at(System.nanoTime()) + "] " + text);
    out.flush();
  }
}
