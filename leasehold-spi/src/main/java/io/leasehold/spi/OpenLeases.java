package io.leasehold.spi;

import io.leasehold.HolderId;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leases one backend has made and not yet closed: a backend makes its leases here, finds one
 * by holder when its store pushes an event, and closes them all when it is closed.
 */
public final class OpenLeases {

  private static final Logger log = LoggerFactory.getLogger(OpenLeases.class);

  private final String backendName;
  private final Map<HolderId, ManagedLease> open = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  private boolean closed;

  /**
   * Makes an empty set.
   *
   * @param backendName how errors name the backend, for example its URI
   */
  public OpenLeases(String backendName) {
    this.backendName = backendName;
  }

  /**
   * Makes and registers a new lease.
   *
   * @param settings the lease's settings, already checked against the backend's limits
   * @param store the backend's store operations
   * @param runtime the backend's clock and threads
   * @return the new lease
   * @throws IllegalStateException if the backend is closed
   */
  public ManagedLease newLease(LeaseSettings settings, LeaseStore store, LeaseRuntime runtime) {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException(
            "backend " + backendName + " is closed; open a new one to make leases");
      }
      ManagedLease lease =
          new ManagedLease(settings, store, runtime, closedLease -> open.remove(closedLease.holder()));
      open.put(lease.holder(), lease);
      return lease;
    }
  }

  /**
   * The open lease of a holder, if this backend made it.
   *
   * @param holder the holder the store named
   * @return the lease, or empty if it is closed or not from this backend
   */
  public Optional<ManagedLease> find(HolderId holder) {
    return Optional.ofNullable(open.get(holder));
  }

  /**
   * Refuses new leases, then closes every open one at once and waits for their releases to
   * settle, at most the longest operation timeout among them. Idempotent.
   */
  public void closeAll() {
    synchronized (lock) {
      closed = true;
    }
    List<CompletableFuture<Void>> pending = new ArrayList<>();
    Duration maxWait = Duration.ZERO;
    for (ManagedLease lease : List.copyOf(open.values())) {
      pending.add(lease.closeAsync());
      Duration timeout = lease.settings().operationTimeout();
      if (timeout.compareTo(maxWait) > 0) {
        maxWait = timeout;
      }
    }
    try {
      CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]))
          .get(maxWait.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      log.warn(
          "Closed backend {} before the store confirmed every release; unconfirmed leases"
              + " expire within their TTL",
          backendName);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // The backend's threads stop next: answer whatever they would have answered.
    for (ManagedLease lease : List.copyOf(open.values())) {
      lease.abandon();
    }
  }
}
