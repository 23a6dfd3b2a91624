package io.leasehold.zookeeper;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * Holds back the watch events a store hands it ({@link ZooKeeperLeaseStore#handleHolderEventsOn})
 * until {@link #release()}, then runs them in the order they came, and any later ones at once. A
 * held-back event is one still on its way to the holder: the server has changed the node, the
 * holder does not know yet.
 */
final class HeldBackEvents implements Executor {

  private final List<Runnable> held = new ArrayList<>();
  private boolean holding = true;

  @Override
  public synchronized void execute(Runnable event) {
    if (holding) {
      held.add(event);
    } else {
      event.run();
    }
  }

  /** {@return how many events are held back now} */
  synchronized int count() {
    return held.size();
  }

  /** Runs the held-back events, in order, and every later one as it comes. */
  synchronized void release() {
    holding = false;
    held.forEach(Runnable::run);
    held.clear();
  }
}
