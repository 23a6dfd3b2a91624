package io.leasehold.spi;

/**
 * Observes the renewals of one {@link ManagedLease}, for metrics: registered with {@link
 * ManagedLease#onRenewal(RenewalListener)}. Called on the thread that completed the store's
 * answer, outside the engine's lock; it must return quickly and not throw (a throw is logged and
 * ignored). Losses are reported by {@link io.leasehold.Lease#onLost}, not here.
 */
public interface RenewalListener {

  /**
   * A renewal (or the confirmation of a held tenure) succeeded.
   *
   * @param latencyNanos from sending the request to its answer, on the lease's ticker
   */
  void renewed(long latencyNanos);

  /**
   * A renewal failed without a definite answer (timeout, store unreachable); the engine retries
   * until the safe deadline.
   *
   * @param latencyNanos from sending the request to the failure
   * @param cause what went wrong
   */
  void renewalFailed(long latencyNanos, Throwable cause);
}
