package io.leasehold.spi;

import io.leasehold.LeaseObserver;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Function;

/**
 * The observations one backend has open: each one's store watch made, started, and forgotten
 * when its subscription is cancelled, the same way on every backend; all closed with the backend.
 */
public final class OpenObservations {

  /** The store's side of one observation: a watch that feeds its {@link Observation}. */
  public interface StoreWatch {
    /** Reads the current state and starts watching; events go to the observation. */
    void start();

    /** Stops watching; the observation gets nothing more from it. */
    void close();
  }

  private final Set<StoreWatch> open = ConcurrentHashMap.newKeySet();

  /** A backend's registry, empty. */
  public OpenObservations() {}

  /**
   * Opens an observation of {@code name}.
   *
   * @param name the lease name (checked by {@link Observation})
   * @param observer the application's observer
   * @param callbacks the backend's callback executor
   * @param watch makes the store's watch for the new observation; it is started at once
   * @return the subscription to hand to the application
   */
  public Observation open(
      String name, LeaseObserver observer, Executor callbacks, Function<Observation, StoreWatch> watch) {
    StoreWatch[] self = new StoreWatch[1];
    Observation observation =
        new Observation(
            name,
            observer,
            callbacks,
            () -> {
              if (open.remove(self[0])) {
                self[0].close();
              }
            });
    self[0] = watch.apply(observation);
    open.add(self[0]);
    self[0].start();
    return observation;
  }

  /** Stops every store watch still open; the backend is closing. */
  public void closeAll() {
    for (StoreWatch w : open) {
      if (open.remove(w)) {
        w.close();
      }
    }
  }
}
