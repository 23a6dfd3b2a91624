package io.leasehold.server.raft;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits for a condition by looking at it every {@link #INTERVAL}: for the threads of an operator's
 * move or of a stopping node, which have nothing else to do meanwhile and wait for state that
 * Ratis or gRPC own and do not signal.
 */
public final class Polling {

  /** How often a condition is looked at. */
  static final Duration INTERVAL = Duration.ofMillis(5);

  private Polling() {}

  /**
   * Looks at {@code done} until it holds or {@code deadline} (System.nanoTime) passes.
   *
   * @return whether it held in time; false also when interrupted (the flag is set again)
   */
  public static boolean until(BooleanSupplier done, long deadline) {
    while (!done.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      try {
        Thread.sleep(INTERVAL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }
}
