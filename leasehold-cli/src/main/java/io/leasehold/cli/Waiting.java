package io.leasehold.cli;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Waiting that another thread can cut short: set a flag, then {@link LockSupport#unpark} the waiter. */
final class Waiting {

  private Waiting() {}

  /**
   * Parks the calling thread until the {@link System#nanoTime()} reading {@code deadline}, or
   * until {@code wakeUp} is true when checked (at the start and whenever the thread is unparked).
   *
   * @return {@code true} if the deadline was reached, {@code false} if woken early
   */
  static boolean until(long deadline, BooleanSupplier wakeUp) {
    for (; ; ) {
      if (wakeUp.getAsBoolean()) {
        return false;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return true;
      }
      LockSupport.parkNanos(left);
    }
  }
}
