package io.leasehold.memory;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The memory backend's {@link LeaseStore}: one simulated process's connection to the shared
 * {@link MemoryStore}, and the network between them. Connected, a request is applied at
 * once and its reply comes back after the configured reply delay (none by default). Cut off,
 * requests and the store's notices are held in flight, as a partition holds back TCP traffic, and
 * delivered in order when the link heals, so a request may arrive long after it was sent. After a
 * crash, nothing comes or goes.
 */
final class MemoryLeaseStore implements LeaseStore {

  private enum State {
    CONNECTED,
    CUT_OFF,
    /** Reconnected, still delivering what was held; new traffic queues behind it, in order. */
    DRAINING,
    CRASHED
  }

  private final MemoryStore store;
  private final OpenLeases leases;
  private final Scheduler process;
  private final Object lock = new Object();
  private final List<Runnable> inFlight = new ArrayList<>();
  private State state = State.CONNECTED;
  private long replyDelayNanos;

  /**
   * @param process the process's own threads: replies held in flight and the store's notices are
   *     handed to them, so they wait while the process is paused
   */
  MemoryLeaseStore(MemoryStore store, OpenLeases leases, Scheduler process) {
    this.store = store;
    this.leases = leases;
    this.process = process;
  }

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    return call(() -> store.acquire(request, this));
  }

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    return call(() -> store.renew(tenure, sentAtNanos));
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    return call(
        () -> {
          store.release(tenure);
          return null;
        });
  }

  /** From the store (never under its lock): the tenure {@code token} of {@code holder} is gone. */
  void push(HolderId holder, long token, LeaseLost reason) {
    Runnable notice =
        () ->
            deliver(() -> leases.find(holder).ifPresent(l -> l.storeReportedLoss(token, reason)));
    synchronized (lock) {
      if (state == State.CUT_OFF || state == State.DRAINING) {
        inFlight.add(notice);
        return;
      }
      if (state == State.CRASHED) {
        return;
      }
    }
    notice.run();
  }

  /**
   * From the store, under its lock: something for an observer in this process. Held in flight
   * while cut off, dropped after a crash, otherwise handed to the process's threads, in order.
   */
  void tell(Runnable arrival) {
    synchronized (lock) {
      if (state == State.CUT_OFF || state == State.DRAINING) {
        inFlight.add(() -> deliver(arrival));
        return;
      }
      if (state == State.CRASHED) {
        return;
      }
    }
    deliver(arrival);
  }

  /** Reads a lease's state through this link: held back while cut off, as any request. */
  CompletableFuture<io.leasehold.LeaseState> read(String leaseName) {
    return call(() -> store.state(leaseName));
  }

  @Override
  public boolean supportsAttach() {
    return true;
  }

  @Override
  public CompletableFuture<Boolean> attach(Tenure tenure, String key, String value) {
    return call(() -> store.attach(tenure, key, value));
  }

  private <T> CompletableFuture<T> call(Supplier<T> request) {
    long delay;
    synchronized (lock) {
      if (state == State.CRASHED) {
        return new CompletableFuture<>();
      }
      if (state == State.CUT_OFF || state == State.DRAINING) {
        CompletableFuture<T> reply = new CompletableFuture<>();
        inFlight.add(
            () -> {
              T answer = request.get();
              deliver(() -> reply.complete(answer));
            });
        return reply;
      }
      delay = replyDelayNanos;
    }
    // The store is called outside the link's lock: its notices take the locks of other links.
    T answer = request.get();
    if (delay == 0) {
      return CompletableFuture.completedFuture(answer);
    }
    CompletableFuture<T> reply = new CompletableFuture<>();
    process.schedule(() -> reply.complete(answer), delay);
    return reply;
  }

  /** Hands something from the store to the process's threads, after the reply delay. */
  private void deliver(Runnable arrival) {
    long delay;
    synchronized (lock) {
      delay = replyDelayNanos;
    }
    process.schedule(arrival, delay);
  }

  void delayReplies(Duration delay) {
    synchronized (lock) {
      replyDelayNanos = delay.toNanos();
    }
  }

  void cutOff() {
    synchronized (lock) {
      if (state == State.CONNECTED || state == State.DRAINING) {
        state = State.CUT_OFF; // what heal() had not delivered yet stays held
      }
    }
  }

  boolean isCutOff() {
    synchronized (lock) {
      return state == State.CUT_OFF;
    }
  }

  /** Reconnects and delivers what was held in flight, oldest first. */
  void heal() {
    synchronized (lock) {
      if (state != State.CUT_OFF) {
        return;
      }
      state = State.DRAINING;
    }
    for (; ; ) {
      List<Runnable> batch;
      synchronized (lock) {
        if (state != State.DRAINING) {
          return;
        }
        if (inFlight.isEmpty()) {
          state = State.CONNECTED;
          return;
        }
        batch = List.copyOf(inFlight);
        inFlight.clear();
      }
      batch.forEach(Runnable::run);
    }
  }

  void crash() {
    synchronized (lock) {
      state = State.CRASHED;
      inFlight.clear();
    }
  }
}
