package io.leasehold;

/** A registration that can be undone, such as an {@link Lease#onLost} handler. */
@FunctionalInterface
public interface Subscription {

  /**
   * Removes the registration. Idempotent. A handler already running finishes; a handler that
   * was not yet called for a loss that happened just before may still be called once.
   */
  void cancel();
}
