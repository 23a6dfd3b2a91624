package io.leasehold.spi;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.Subscription;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observation of a lease name, for backends that implement {@link
 * io.leasehold.LeaseBackend#observe}: the backend {@linkplain #emit emits} events in store order,
 * from any thread and under its own locks if it must; the observer is called one event at a time,
 * in that order, on the callback executor, never under a lock. An observer that throws is logged
 * and keeps its subscription.
 */
public final class Observation implements Subscription {

  private static final Logger log = LoggerFactory.getLogger(Observation.class);

  private final String name;
  private final LeaseObserver observer;
  private final Executor callbacks;
  private final Runnable onCancel;
  private final Object lock = new Object();
  private final ArrayDeque<LeaseEvent> pending = new ArrayDeque<>(); // guarded by lock
  private boolean draining; // guarded by lock
  private volatile boolean cancelled;

  /**
   * Starts an observation; nothing is delivered until the first {@link #emit}.
   *
   * @param name the lease name, checked by the rules of {@link LeaseSettings#name()}
   * @param observer the application's observer
   * @param callbacks the backend's callback executor (the one that runs loss handlers)
   * @param onCancel called once when the subscription is cancelled, so the backend stops the
   *     store's watch; not called under any lock of this class
   * @throws IllegalArgumentException if the name is invalid
   */
  public Observation(String name, LeaseObserver observer, Executor callbacks, Runnable onCancel) {
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "observer"); // checks the name
    this.name = name;
    this.observer = Objects.requireNonNull(observer, "observer");
    this.callbacks = Objects.requireNonNull(callbacks, "callbacks");
    this.onCancel = Objects.requireNonNull(onCancel, "onCancel");
  }

  /** {@return the lease name observed} */
  public String name() {
    return name;
  }

  /** {@return whether the subscription was cancelled (or the backend closed)} */
  public boolean isCancelled() {
    return cancelled;
  }

  /**
   * Queues an event for the observer; events are delivered in the order of the calls. Ignored
   * after {@link #cancel()}.
   *
   * @param event the event, about this observation's lease name
   */
  public void emit(LeaseEvent event) {
    Objects.requireNonNull(event, "event");
    if (cancelled) {
      return;
    }
    synchronized (lock) {
      pending.add(event);
      if (draining) {
        return;
      }
      draining = true;
    }
    callbacks.execute(this::drain);
  }

  private void drain() {
    for (; ; ) {
      LeaseEvent next;
      synchronized (lock) {
        next = pending.poll();
        if (next == null || cancelled) {
          pending.clear();
          draining = false;
          return;
        }
      }
      try {
        observer.onEvent(next);
      } catch (RuntimeException e) {
        log.warn("An observer of lease '{}' threw on {}; it stays subscribed", name, next, e);
      }
    }
  }

  /** Stops delivery: an event being delivered finishes; none is delivered after it. Idempotent. */
  @Override
  public void cancel() {
    synchronized (lock) {
      if (cancelled) {
        return;
      }
      cancelled = true;
    }
    onCancel.run();
  }
}
