package io.leasehold.spi;

import java.util.Objects;

/** The store's definite answer to an {@link AcquireRequest}. */
public sealed interface AcquireResult {

  /**
   * The holder now holds the lease.
   *
   * @param token the tenure's fencing token
   * @param validFromNanos a holder ticker reading no later than the moment from which the store
   *     measures this tenure's TTL; normally the request's {@code sentAtNanos}
   */
  record Acquired(long token, long validFromNanos) implements AcquireResult {}

  /**
   * Another holder holds the lease.
   *
   * @param holder that holder as the store records it, for messages; empty if unknown
   */
  record HeldElsewhere(String holder) implements AcquireResult {
    /**
     * Checks that a holder is given (empty if unknown).
     *
     * @param holder the holder as the store records it
     */
    public HeldElsewhere {
      Objects.requireNonNull(holder, "holder");
    }
  }
}
