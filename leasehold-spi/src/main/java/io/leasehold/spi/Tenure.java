package io.leasehold.spi;

import io.leasehold.HolderId;
import java.time.Duration;
import java.util.Objects;

/**
 * One tenure as the store granted it: a holder's continuous possession of a lease, from a
 * successful acquisition to its release or loss. Renewals and releases are conditional on it.
 *
 * @param leaseName the lease record
 * @param holder who holds it
 * @param requestId the acquire call that made it
 * @param token the fencing token the store assigned to it
 * @param ttl the time-to-live the store applies after each renewal
 */
public record Tenure(String leaseName, HolderId holder, long requestId, long token, Duration ttl) {

  /**
   * Checks that every part is present.
   *
   * @param leaseName the lease record
   * @param holder who holds it
   * @param requestId the acquire call that made it
   * @param token the fencing token
   * @param ttl the time-to-live
   */
  public Tenure {
    Objects.requireNonNull(leaseName, "leaseName");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(ttl, "ttl");
  }
}
