package io.leasehold.spi;

import io.leasehold.LeaseLost;
import java.util.Objects;

/** The store's definite answer to a renewal. */
public sealed interface RenewResult {

  /**
   * The store still holds the tenure and extended it.
   *
   * @param validFromNanos a holder ticker reading no later than the moment from which the store
   *     measures the extended TTL: the renewal's {@code sentAtNanos}, or the send time of an
   *     earlier shared keep-alive that this answer stands for
   */
  record Renewed(long validFromNanos) implements RenewResult {}

  /**
   * The store no longer holds this tenure.
   *
   * @param reason why, as {@link io.leasehold.Lease#onLost} handlers will see it
   */
  record Lost(LeaseLost reason) implements RenewResult {
    /**
     * Checks that a reason is given.
     *
     * @param reason why the tenure is gone
     */
    public Lost {
      Objects.requireNonNull(reason, "reason");
    }
  }
}
