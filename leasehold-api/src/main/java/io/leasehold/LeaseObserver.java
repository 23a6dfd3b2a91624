package io.leasehold;

/**
 * Told who holds a lease and of every change, by {@link LeaseBackend#observe}.
 *
 * <p>Calls come one at a time, in order, on the backend's callback thread (the one that runs
 * {@link Lease#onLost} handlers), never under an internal lock. An observer that throws is logged
 * and keeps its subscription; one that blocks delays the loss handlers of the backend's leases,
 * so hand slow work to another thread.
 */
@FunctionalInterface
public interface LeaseObserver {

  /**
   * Called with the lease's state as the observation begins ({@link LeaseEvent.Type#CURRENT}),
   * then with each change.
   *
   * @param event what happened
   */
  void onEvent(LeaseEvent event);
}
