package io.leasehold.recipes.fencing;

/**
 * A {@link FencingGuard} turned a token away: a newer holder of the lease has already acted, so
 * the caller's tenure is over even if its lease object has not noticed yet.
 */
public final class StaleTokenException extends IllegalStateException {

  private static final long serialVersionUID = 1L;

  /** The rejected token. */
  private final long token;

  /** The highest token the guard had accepted. */
  private final long highest;

  /**
   * Makes the exception.
   *
   * @param token the rejected token
   * @param highest the highest token the guard had accepted
   */
  public StaleTokenException(long token, long highest) {
    super(
        "fencing token " + token + " is stale: token " + highest
            + " was already accepted, so a newer holder has acted; stop using this lease");
    this.token = token;
    this.highest = highest;
  }

  /** {@return the rejected token} */
  public long token() {
    return token;
  }

  /** {@return the highest token the guard had accepted when it rejected this one} */
  public long highest() {
    return highest;
  }
}
