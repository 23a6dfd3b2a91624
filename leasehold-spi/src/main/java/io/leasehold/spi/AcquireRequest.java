package io.leasehold.spi;

import io.leasehold.HolderId;
import java.time.Duration;
import java.util.Objects;

/**
 * One acquisition as sent to a {@link LeaseStore}.
 *
 * @param leaseName the lease record to take
 * @param holder who takes it
 * @param requestId identifies one {@link io.leasehold.Lease#acquire()} call of this holder; its
 *     internal retries reuse it so that the store can recognise a retry of a request whose reply
 *     was lost, and a later call uses a greater one
 * @param ttl how long the store keeps the record after the last renewal it received
 * @param sentAtNanos the holder's ticker reading when it sent the request
 */
public record AcquireRequest(
    String leaseName, HolderId holder, long requestId, Duration ttl, long sentAtNanos) {

  /**
   * Checks that every part is present.
   *
   * @param leaseName the lease record to take
   * @param holder who takes it
   * @param requestId the acquire call this request belongs to
   * @param ttl the time-to-live
   * @param sentAtNanos when it was sent
   */
  public AcquireRequest {
    Objects.requireNonNull(leaseName, "leaseName");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(ttl, "ttl");
  }
}
