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
 * @param timeout how long after sending the holder waits for the answer. Past it the holder has
 *     given up on this request: a backend should stop retrying it internally then (nobody waits
 *     for its answer any more) and complete the future, exceptionally if it has no answer. A grant
 *     that still arrives later is not used: the holder releases it at once.
 */
public record AcquireRequest(
    String leaseName,
    HolderId holder,
    long requestId,
    Duration ttl,
    long sentAtNanos,
    Duration timeout) {

  /**
   * Checks that every part is present and the timeout positive.
   *
   * @param leaseName the lease record to take
   * @param holder who takes it
   * @param requestId the acquire call this request belongs to
   * @param ttl the time-to-live
   * @param sentAtNanos when it was sent
   * @param timeout how long the holder waits for the answer
   */
  public AcquireRequest {
    Objects.requireNonNull(leaseName, "leaseName");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(ttl, "ttl");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive; was " + timeout);
    }
  }

  /**
   * A request whose holder waits up to one TTL for the answer (a grant answered later than that
   * is of no use anyway); for stores' own tests.
   *
   * @param leaseName the lease record to take
   * @param holder who takes it
   * @param requestId the acquire call this request belongs to
   * @param ttl the time-to-live, also the timeout
   * @param sentAtNanos when it was sent
   */
  public AcquireRequest(
      String leaseName, HolderId holder, long requestId, Duration ttl, long sentAtNanos) {
    this(leaseName, holder, requestId, ttl, sentAtNanos, Objects.requireNonNull(ttl, "ttl"));
  }
}
