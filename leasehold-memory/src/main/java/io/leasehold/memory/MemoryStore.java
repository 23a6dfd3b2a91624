package io.leasehold.memory;

import io.leasehold.HolderId;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseState;
import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.Observation;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An in-process lease store: the reference for what every backend's store does, and the store
 * applications use in their own tests.
 *
 * <p>Each simulated process talks to the store through its own {@link MemoryBackend}, made by
 * {@link #connect()}; several connections contend for real, and each can be cut off, crashed or
 * paused on its own. Expiry is measured by the store from when it receives each request, on the
 * store's ticker; the fencing token is one counter for the whole store, so it grows across all
 * names. With a {@link VirtualClock} (see {@link #create(VirtualClock)}) the store and all its
 * connections run on virtual time.
 *
 * <p>An operator's {@link #revoke} ends a tenure, but the name goes to nobody else until the holder
 * has stopped: the revoked record stays as a tombstone until the holder releases exactly that
 * tenure (it does once it heard of the revocation and ran its loss handlers) or until the record
 * expires, one TTL after its last renewal — the holder's safe window has passed by then.
 *
 * <p><b>Observers and attached keys.</b> Every change of a lease record is reported, in the order
 * the store made it (under its lock), to the observers of that name, through each observer's own
 * connection: a cut-off process hears of the changes when it heals, in order, and misses none.
 * While a name is observed, the store checks its record's expiry on a timer, so an expiry is
 * reported when it happens rather than at the next request. Keys attached to a tenure live in its
 * record and vanish with it.
 *
 * <pre>{@code
 * VirtualClock clock = new VirtualClock();
 * MemoryStore store = MemoryStore.create(clock);
 * MemoryBackend node1 = store.connect(), node2 = store.connect();
 * Lease a = node1.newLease(settings("jobs", "node-1")), b = node2.newLease(settings("jobs", "node-2"));
 * a.acquire().join();                       // true
 * node1.cutOff();                           // node-1 can no longer renew
 * clock.advance(Duration.ofSeconds(20));    // past the TTL: a's onLost fires first
 * b.acquire().join();                       // true, with a greater fencing token
 * }</pre>
 */
public final class MemoryStore {

  private final Ticker ticker;
  private final VirtualClock clock;
  private final AtomicInteger connections = new AtomicInteger();

  // Guarded by this.
  private final Map<String, Entry> entries = new HashMap<>();
  private long lastToken;
  private int operationsSinceSweep;
  /** Observers by lease name; empty unless something observes. */
  private final Map<String, List<Watcher>> watchers = new HashMap<>();
  /** Names whose expiry check is scheduled. */
  private final java.util.Set<String> expiryChecks = new java.util.HashSet<>();
  /** The store's own timer for expiry checks: the virtual clock, or a thread made on first use. */
  private Scheduler storeTimer;

  private MemoryStore(Ticker ticker, VirtualClock clock) {
    this.ticker = ticker;
    this.clock = clock;
  }

  /** {@return a store on this JVM's clock; its connections each get a timer and a callback thread} */
  public static MemoryStore create() {
    return new MemoryStore(Ticker.system(), null);
  }

  /**
   * A store whose time, and that of all its connections, is {@code clock}: nothing happens until
   * the test advances it.
   *
   * @param clock the virtual clock
   * @return the store
   */
  public static MemoryStore create(VirtualClock clock) {
    Objects.requireNonNull(clock, "clock");
    return new MemoryStore(clock, clock);
  }

  /** {@return the clock the store measures expiry with} */
  public Ticker ticker() {
    return ticker;
  }

  /**
   * Connects a new simulated process to this store.
   *
   * @return the process's backend; closing it closes its leases
   */
  public MemoryBackend connect() {
    return new MemoryBackend(this, clock, "memory-" + connections.incrementAndGet());
  }

  /**
   * The live record of a lease, if any (an expired record counts as none).
   *
   * @param leaseName the lease name
   * @return its holder, token and time left
   */
  public Optional<StoredLease> lookup(String leaseName) {
    Objects.requireNonNull(leaseName, "leaseName");
    List<Runnable> pushes = new ArrayList<>();
    Optional<StoredLease> found;
    synchronized (this) {
      long now = ticker.read();
      Entry e = live(leaseName, now, pushes);
      found =
          e == null || e.revoked
              ? Optional.empty()
              : Optional.of(
                  new StoredLease(
                      leaseName, e.holder, e.token, Duration.ofNanos(e.expiresAt - now)));
    }
    pushes.forEach(Runnable::run);
    return found;
  }

  /**
   * Revokes a lease record as an operator would, whoever holds it. The holder hears of it at once
   * if its connection is up (as with a store that pushes events), or at its next renewal; until it
   * releases that tenure, or its record expires, nobody else can acquire the lease.
   *
   * @param leaseName the lease name
   * @return whether there was a live record to revoke
   */
  public boolean revoke(String leaseName) {
    Objects.requireNonNull(leaseName, "leaseName");
    List<Runnable> pushes = new ArrayList<>();
    boolean revoked;
    synchronized (this) {
      Entry e = live(leaseName, ticker.read(), pushes);
      revoked = e != null && !e.revoked;
      if (revoked) {
        e.revoked = true; // a tombstone: it still blocks the name (see the class doc)
        e.attached.clear(); // the tenure is over for everyone but its (not yet told) holder
        emit(leaseName, LeaseEvent.Type.REVOKED, e, "deleted in the store by an operator");
        pushes.add(
            e.notice(
                new LeaseLost(
                    LeaseLost.Kind.REVOKED,
                    "the record of lease '" + leaseName + "' (token " + e.token
                        + ") was deleted in the store")));
      }
    }
    pushes.forEach(Runnable::run);
    return revoked;
  }

  AcquireResult acquire(AcquireRequest request, MemoryLeaseStore origin) {
    List<Runnable> pushes = new ArrayList<>();
    AcquireResult result;
    synchronized (this) {
      long now = ticker.read();
      long ttl = request.ttl().toNanos();
      Entry e = live(request.leaseName(), now, pushes);
      if (e != null
          && (!e.holder.equals(request.holder()) || e.requestId > request.requestId())) {
        // Another holder, or a newer request of this one: this request is a late copy.
        result = new AcquireResult.HeldElsewhere(e.holder.toString());
      } else if (e != null && e.revoked && e.requestId == request.requestId()) {
        // A late copy of the revoked tenure's own request: that tenure does not come back.
        result = new AcquireResult.HeldElsewhere(e.holder.toString());
      } else if (e != null && e.requestId == request.requestId()) {
        e.expiresAt = now + ttl;
        result = new AcquireResult.Acquired(e.token, request.sentAtNanos());
      } else {
        Entry granted =
            new Entry(request.holder(), request.requestId(), ++lastToken, ttl, now + ttl, origin);
        Entry replaced = entries.put(request.leaseName(), granted);
        if (replaced != null && !replaced.revoked) {
          emit(request.leaseName(), LeaseEvent.Type.RELEASED, replaced, "replaced by a new tenure of the same holder");
        }
        emit(request.leaseName(), LeaseEvent.Type.ACQUIRED, granted, "");
        armExpiryCheck(request.leaseName(), granted, now);
        result = new AcquireResult.Acquired(granted.token, request.sentAtNanos());
      }
    }
    pushes.forEach(Runnable::run);
    return result;
  }

  RenewResult renew(Tenure tenure, long sentAtNanos) {
    List<Runnable> pushes = new ArrayList<>();
    RenewResult result;
    synchronized (this) {
      long now = ticker.read();
      Entry e = live(tenure.leaseName(), now, pushes);
      if (e == null) {
        result =
            lost(
                LeaseLost.Kind.REVOKED,
                "the store has no record of lease '" + tenure.leaseName()
                    + "': it expired there or was deleted");
      } else if (!e.holder.equals(tenure.holder())) {
        result =
            lost(
                LeaseLost.Kind.TAKEN_OVER,
                "the store says " + e.holder + " holds lease '" + tenure.leaseName() + "' (token "
                    + e.token + ")");
      } else if (e.token != tenure.token()) {
        result =
            lost(
                LeaseLost.Kind.REVOKED,
                "tenure " + tenure.token() + " of lease '" + tenure.leaseName()
                    + "' was replaced by tenure " + e.token + " of the same holder");
      } else if (e.revoked) {
        result =
            lost(
                LeaseLost.Kind.REVOKED,
                "the record of lease '" + tenure.leaseName() + "' (token " + e.token
                    + ") was deleted in the store");
      } else {
        e.expiresAt = now + e.ttl;
        result = new RenewResult.Renewed(sentAtNanos);
      }
    }
    pushes.forEach(Runnable::run);
    return result;
  }

  private static RenewResult lost(LeaseLost.Kind kind, String detail) {
    return new RenewResult.Lost(new LeaseLost(kind, detail));
  }

  void release(Tenure tenure) {
    List<Runnable> pushes = new ArrayList<>();
    synchronized (this) {
      Entry e = live(tenure.leaseName(), ticker.read(), pushes);
      if (e != null && e.holder.equals(tenure.holder()) && e.token == tenure.token()) {
        entries.remove(tenure.leaseName());
        if (!e.revoked) { // a revoked one was reported when it was revoked
          emit(tenure.leaseName(), LeaseEvent.Type.RELEASED, e, "");
        }
      }
    }
    pushes.forEach(Runnable::run);
  }

  /**
   * The live entry for a name; drops an expired one, telling its holder (the pushes run after
   * unlocking). Every so often it sweeps all names, so that records of holders that vanished do
   * not pile up: a full pass every max(64, n) operations costs O(1) per operation.
   */
  private Entry live(String name, long now, List<Runnable> pushes) {
    if (++operationsSinceSweep >= Math.max(64, entries.size())) {
      operationsSinceSweep = 0;
      entries.entrySet().removeIf(x -> expire(x.getKey(), x.getValue(), now, pushes));
    }
    Entry e = entries.get(name);
    if (e != null && expire(name, e, now, pushes)) {
      entries.remove(name);
      return null;
    }
    return e;
  }

  /** Whether {@code e} has expired; if so, queues the notice to its holder and tells observers. */
  private boolean expire(String name, Entry e, long now, List<Runnable> pushes) {
    if (e.expiresAt - now > 0) {
      return false;
    }
    if (!e.revoked) { // a revoked one was reported when it was revoked
      emit(
          name,
          LeaseEvent.Type.EXPIRED,
          e,
          "its TTL of " + Duration.ofNanos(e.ttl).toMillis() + " ms passed without a renewal");
    }
    pushes.add(
        e.notice(
            new LeaseLost(
                LeaseLost.Kind.REVOKED,
                "lease '" + name + "' (token " + e.token + ") expired in the store: its TTL of "
                    + Duration.ofNanos(e.ttl).toMillis() + " ms passed without a renewal")));
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Observers and attached keys.

  /** Writes an attached key if {@code tenure} is still exactly the live record. */
  boolean attach(Tenure tenure, String key, String value) {
    List<Runnable> pushes = new ArrayList<>();
    boolean written;
    synchronized (this) {
      Entry e = live(tenure.leaseName(), ticker.read(), pushes);
      written =
          e != null && !e.revoked && e.holder.equals(tenure.holder()) && e.token == tenure.token();
      if (written) {
        e.attached.put(key, value);
      }
    }
    pushes.forEach(Runnable::run);
    return written;
  }

  /** The record of a name as an observer sees it: a revoked one counts as none. */
  LeaseState state(String leaseName) {
    List<Runnable> pushes = new ArrayList<>();
    LeaseState state;
    synchronized (this) {
      Entry e = live(leaseName, ticker.read(), pushes);
      state =
          e == null || e.revoked
              ? new LeaseState(leaseName, Optional.empty(), Map.of())
              : new LeaseState(leaseName, Optional.of(e.holding()), e.attached);
    }
    pushes.forEach(Runnable::run);
    return state;
  }

  /**
   * Registers an observer of a name; it is told the current state first, then each change, all
   * through {@code link} (held back while that process is cut off).
   */
  void watch(Observation observation, MemoryLeaseStore link) {
    List<Runnable> pushes = new ArrayList<>();
    synchronized (this) {
      long now = ticker.read();
      Entry e = live(observation.name(), now, pushes);
      Watcher w = new Watcher(observation, link);
      watchers.computeIfAbsent(observation.name(), n -> new ArrayList<>()).add(w);
      Optional<LeaseHolding> holding =
          e == null || e.revoked ? Optional.empty() : Optional.of(e.holding());
      w.tell(new LeaseEvent(LeaseEvent.Type.CURRENT, observation.name(), holding, ""));
      if (e != null) {
        armExpiryCheck(observation.name(), e, now);
      }
    }
    pushes.forEach(Runnable::run);
  }

  synchronized void unwatch(Observation observation) {
    List<Watcher> list = watchers.get(observation.name());
    if (list != null) {
      list.removeIf(w -> w.observation == observation);
      if (list.isEmpty()) {
        watchers.remove(observation.name());
      }
    }
  }

  /** Tells the observers of {@code name} about {@code e}; called under the store's lock, in order. */
  private void emit(String name, LeaseEvent.Type type, Entry e, String detail) {
    List<Watcher> list = watchers.get(name);
    if (list == null) {
      return; // nobody observes: the common case costs one map lookup
    }
    LeaseEvent event = new LeaseEvent(type, name, Optional.of(e.holding()), detail);
    for (Watcher w : list) {
      w.tell(event);
    }
  }

  /**
   * While a name is observed, checks its record when it is due to expire, so that observers hear
   * of the expiry without waiting for the next request. One pending check per name; a check that
   * finds the record renewed arms the next one.
   */
  private void armExpiryCheck(String name, Entry e, long now) {
    if (!watchers.containsKey(name) || !expiryChecks.add(name)) {
      return;
    }
    if (storeTimer == null) {
      storeTimer = clock != null ? clock : LeaseRuntime.system("memory-store").timers();
    }
    storeTimer.schedule(() -> checkExpiry(name), e.expiresAt - now);
  }

  private void checkExpiry(String name) {
    List<Runnable> pushes = new ArrayList<>();
    synchronized (this) {
      expiryChecks.remove(name);
      long now = ticker.read();
      Entry e = live(name, now, pushes);
      if (e != null) {
        armExpiryCheck(name, e, now);
      }
    }
    pushes.forEach(Runnable::run);
  }

  /** One observer of a name, and the connection of the process it is in. */
  private record Watcher(Observation observation, MemoryLeaseStore link) {
    void tell(LeaseEvent event) {
      link.tell(() -> observation.emit(event));
    }
  }

  /** {@return how many records the store keeps, expired ones not yet swept included} */
  synchronized int recordCount() {
    return entries.size();
  }

  private static final class Entry {
    final HolderId holder;
    final long requestId;
    final long token;
    final long ttl;
    final MemoryLeaseStore origin;
    long expiresAt;
    /** An operator revoked it: not renewed any more, it blocks the name until released or expired. */
    boolean revoked;
    /** Keys attached to this tenure; they go with it. */
    final Map<String, String> attached = new TreeMap<>();
    /** When the tenure began, by the wall clock: for display only. */
    final Instant since = Instant.now();

    Entry(HolderId holder, long requestId, long token, long ttl, long expiresAt, MemoryLeaseStore origin) {
      this.holder = holder;
      this.requestId = requestId;
      this.token = token;
      this.ttl = ttl;
      this.expiresAt = expiresAt;
      this.origin = origin;
    }

    LeaseHolding holding() {
      return new LeaseHolding(holder.toString(), token, Optional.of(since));
    }

    /** Tells the holder's process, through its link, that this tenure is gone. */
    Runnable notice(LeaseLost reason) {
      return () -> origin.push(holder, token, reason);
    }
  }
}
