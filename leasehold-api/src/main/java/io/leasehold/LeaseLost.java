package io.leasehold;

import java.util.Objects;

/**
 * Why a held lease was lost, as passed to {@link Lease#onLost} handlers.
 *
 * @param kind what happened
 * @param detail a human-readable account for logs: what was observed, when, and by whom
 */
public record LeaseLost(Kind kind, String detail) {

  /** What ended the tenure. */
  public enum Kind {
    /**
     * The local safe deadline passed without a successful renewal: the store was unreachable,
     * answered too slowly, or this process was paused or starved for longer than the TTL allows.
     */
    EXPIRED,
    /** The store reported that another holder now holds the lease. */
    TAKEN_OVER,
    /**
     * The store reported that this tenure no longer exists: it expired there, an operator deleted
     * it, or the session it was attached to ended.
     */
    REVOKED,
    /** The store reported a state that contradicts this tenure, so it cannot be trusted. */
    INCONSISTENT
  }

  /**
   * Checks that both parts are present.
   *
   * @param kind what happened
   * @param detail a human-readable account
   */
  public LeaseLost {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(detail, "detail");
  }

  @Override
  public String toString() {
    return kind + ": " + detail;
  }
}
