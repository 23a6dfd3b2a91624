package io.leasehold.cli;

/**
 * The demo's protected resource: a register that only the leader should write, and that defends
 * itself with fencing tokens (docs/recipes.md, FencingGuard). It remembers the highest token it has seen and accepts a
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

  private long highestToken = Long.MIN_VALUE;
  private String value;
  private long accepted;
  private long rejected;

  /** Writes {@code newValue} unless {@code token} is below the highest token seen so far. */
  synchronized Outcome write(long token, String newValue) {
    if (token < highestToken) {
      rejected++;
      return new Outcome(false, highestToken);
    }
    highestToken = token;
    value = newValue;
    accepted++;
    return new Outcome(true, highestToken);
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
