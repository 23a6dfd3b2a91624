package io.leasehold.cli;

import io.leasehold.recipes.fencing.FencingGuard;

/**
 * The demo's protected resource: a register that only the leader should write, and that defends
 * itself with fencing tokens: the {@link FencingGuard} a user would put in front of a resource. It remembers the highest token it has seen and accepts a
 * write only if the write's token is at least that high, so a holder that woke up from a pause
 * after another holder began cannot overwrite the newer holder's work, even if its write got past
 * its own {@code checkAlive()}. Thread-safe.
 */
final class FencedRegister {

  /**
   * What a write achieved.
   *
   * @param accepted whether the register took the value
   * @param highestToken the highest token the register has seen, after this write
   */
  record Outcome(boolean accepted, long highestToken) {}

  private final FencingGuard fence = new FencingGuard();
  private String value;
  private long accepted;
  private long rejected;

  /**
   * Writes {@code newValue} unless {@code token} is below the highest token seen so far. The
   * guard's check and the write happen under one lock, as FencingGuard's Javadoc asks.
   */
  synchronized Outcome write(long token, String newValue) {
    if (!fence.tryAccept(token)) {
      rejected++;
      return new Outcome(false, fence.highest().orElseThrow());
    }
    value = newValue;
    accepted++;
    return new Outcome(true, token);
  }

  /** {@return the last value accepted, or {@code null} before the first write} */
  synchronized String value() {
    return value;
  }

  /** {@return how many writes were accepted} */
  synchronized long accepted() {
    return accepted;
  }

  /** {@return how many writes were rejected for carrying a stale token} */
  synchronized long rejected() {
    return rejected;
  }
}
