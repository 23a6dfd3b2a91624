package io.leasehold.spring.boot;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

/**
 * The auto-configured {@link LeaseBackend}: the backend opened from {@code leasehold.backend},
 * counting its leases for the health indicator (held now, lost since start). The leases it makes
 * are the backend's own, unwrapped: counting costs one {@code onLost} handler per lease, nothing on
 * the renewal path. {@link #unwrap()} gives the backend itself.
 */
public final class CountingLeaseBackend implements LeaseBackend {

  private final LeaseBackend backend;
  private final LongAdder lost = new LongAdder();
  /** Weak: a lease nobody references any more is gone, held or not. */
  private final Set<Lease> leases = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

  /**
   * Counts the leases of {@code backend}.
   *
   * @param backend the backend; closed by {@link #close()}
   */
  public CountingLeaseBackend(LeaseBackend backend) {
    this.backend = Objects.requireNonNull(backend, "backend");
  }

  /** {@return the backend this one counts for} */
  public LeaseBackend unwrap() {
    return backend;
  }

  /** {@return how many of this backend's leases are held now ({@link Lease#checkAlive()})} */
  public int heldLeases() {
    List<Lease> snapshot;
    synchronized (leases) {
      snapshot = new ArrayList<>(leases);
    }
    int held = 0;
    for (Lease l : snapshot) {
      if (l.checkAlive()) {
        held++;
      }
    }
    return held;
  }

  /** {@return how many times a lease of this backend was lost ({@link Lease#onLost}) since it opened} */
  public long lostLeases() {
    return lost.sum();
  }

  @Override
  public Lease newLease(LeaseSettings settings) {
    Lease lease = backend.newLease(settings);
    lease.onLost(reason -> lost.increment());
    leases.add(lease);
    return lease;
  }

  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    return backend.observe(name, observer);
  }

  @Override
  public CompletableFuture<LeaseState> read(String name) {
    return backend.read(name);
  }

  @Override
  public String uri() {
    return backend.uri();
  }

  @Override
  public void close() {
    backend.close();
  }

  @Override
  public String toString() {
    return backend.toString();
  }
}
