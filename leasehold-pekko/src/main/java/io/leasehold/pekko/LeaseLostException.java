package io.leasehold.pekko;

import io.leasehold.LeaseLost;
import java.util.Objects;
import org.apache.pekko.coordination.lease.LeaseException;

/**
 * What the lease-lost callback of {@code acquire(callback)} receives: the Leasehold {@link
 * LeaseLost} reason (expired, taken over, revoked, inconsistent) of one lost tenure.
 */
public final class LeaseLostException extends LeaseException {

  private static final long serialVersionUID = 1L;

  /** @serial the reason, as the Leasehold lease reported it */
  private final LeaseLost reason;

  /** @serial the fencing token of the tenure that was lost */
  private final long fencingToken;

  LeaseLostException(String leaseName, long fencingToken, LeaseLost reason) {
    super(
        "Leasehold lease '" + leaseName + "' lost (fencing token " + fencingToken + "): "
            + reason);
    this.reason = Objects.requireNonNull(reason, "reason");
    this.fencingToken = fencingToken;
  }

  /** {@return why the tenure ended} */
  public LeaseLost reason() {
    return reason;
  }

  /** {@return the fencing token of the tenure that was lost} */
  public long fencingToken() {
    return fencingToken;
  }
}
