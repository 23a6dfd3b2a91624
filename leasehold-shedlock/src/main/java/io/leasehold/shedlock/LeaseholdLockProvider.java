package io.leasehold.shedlock;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ShedLock {@link ExtensibleLockProvider} on any Leasehold backend: each ShedLock lock is one
 * lease, named {@code namePrefix + lockName}.
 *
 * <p><b>How ShedLock's settings map onto a lease.</b>
 *
 * <ul>
 *   <li>{@code lock()} tries once: it answers empty when another node holds the lock (the lease is
 *       made with {@code acquireRetries = 0}), and throws {@link LockException} when the store's
 *       answer is unknown (unreachable, timeout), so a scheduler logs it instead of silently
 *       skipping.</li>
 *   <li>While a node runs the task, its lease is renewed in the background; if the node dies, the
 *       store frees the lock after the lease's TTL, which is {@code min(lockAtMostFor, ttl)}
 *       (but at least {@link Builder#minimumTtl(Duration) minimumTtl}), typically far sooner than
 *       the {@code lockAtMostFor} other providers wait for.</li>
 *   <li>{@code lockAtMostFor} still caps the lock as ShedLock documents it: counted on this JVM's
 *       monotonic clock from the call to {@code lock()}, the lease is released when it runs out,
 *       even if the task still runs.</li>
 *   <li>{@code lockAtLeastFor}: after {@code unlock()} the lease stays held (and renewed) until
 *       {@code lockAtLeastFor} has passed since {@code lock()}, then is released. A node that dies
 *       in between frees it after the TTL instead. A {@code lock()} of the same name in this
 *       process once {@code lockAtLeastFor} has passed first finishes that release (its timer or
 *       the store may lag behind on a loaded machine), then acquires anew.</li>
 *   <li>{@code extend()} confirms the tenure with the store (one round trip) and moves the cap; a
 *       lock whose cap passed or whose lease was lost cannot be extended (empty).</li>
 * </ul>
 *
 * <p>The lock returned is a {@link LeaseholdLock}, which also offers the tenure's
 * {@linkplain LeaseholdLock#fencingToken() fencing token}. ShedLock has no way to stop a running
 * task, so a lease lost while a task runs (the store unreachable past the safe window) is logged
 * as a warning; the task should check {@link LeaseholdLock#checkAlive()} or pass the fencing token
 * to the resource it writes.
 *
 * <p>Thread-safe. {@link #close()} releases every lock still held (the backend stays open: the
 * caller owns it).
 */
public final class LeaseholdLockProvider implements ExtensibleLockProvider, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaseholdLockProvider.class);

  /** The default {@link Builder#minimumTtl(Duration)}. */
  public static final Duration DEFAULT_MINIMUM_TTL = Duration.ofSeconds(1);

  /** The default {@link Builder#namePrefix(String)}. */
  public static final String DEFAULT_NAME_PREFIX = "shedlock/";

  private final LeaseBackend backend;
  private final Function<String, LeaseSettings> settingsFor;
  private final String namePrefix;
  private final Duration minimumTtl;
  private final ScheduledExecutorService timer;
  private final Set<Tenancy> held = ConcurrentHashMap.newKeySet();
  private final Map<String, Slot> slots = new ConcurrentHashMap<>();

  private LeaseholdLockProvider(Builder b) {
    this.backend = b.backend;
    this.namePrefix = b.namePrefix;
    this.minimumTtl = b.minimumTtl;
    String owner = b.owner != null ? b.owner : defaultOwner();
    Duration ttl = b.ttl;
    this.settingsFor =
        b.settingsFor != null
            ? b.settingsFor
            : name -> {
              LeaseSettings.Builder s = LeaseSettings.builder(name, owner);
              if (ttl != null) {
                s.ttl(ttl);
              }
              return s.build();
            };
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread t = new Thread(task, "leasehold-shedlock-timer");
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * A provider with default settings: leases of 15 s held as this process
   * ({@code pid@host}).
   *
   * @param backend where the leases live; the caller keeps owning it
   * @return the provider
   */
  public static LeaseholdLockProvider of(LeaseBackend backend) {
    return builder(backend).build();
  }

  /**
   * Starts a provider.
   *
   * @param backend where the leases live; the caller keeps owning it
   * @return a builder
   */
  public static Builder builder(LeaseBackend backend) {
    return new Builder(backend);
  }

  @Override
  public Optional<SimpleLock> lock(LockConfiguration config) {
    long start = System.nanoTime();
    String name = namePrefix + config.getName();
    LeaseSettings settings = settingsFor(name, config.getLockAtMostFor());
    Slot slot = slots.computeIfAbsent(name, n -> new Slot(config.getName()));
    Tenancy due = slot.releaseDue();
    if (due != null) {
      // This process still holds the name from an earlier run whose lockAtLeastFor has passed:
      // its release is due or on its way. Finish it (bounded by the lease's operation timeout)
      // instead of refusing this run because a timer or the store has not caught up yet.
      due.end().join();
    }
    Lease lease = slot.take(settings);
    if (lease == null) {
      return Optional.empty(); // another thread of this process holds or is taking it
    }
    boolean acquired;
    try {
      acquired = lease.acquire().get();
    } catch (InterruptedException e) {
      lease.release(); // a grant that arrives later is given back
      slot.free();
      Thread.currentThread().interrupt();
      throw new LockException("interrupted while locking '" + config.getName() + "'", e);
    } catch (ExecutionException e) {
      // The slot keeps its lease object: if the store did grant it, the next lock() of this
      // name is recognised as the same holder instead of being refused by its own ghost.
      slot.free();
      throw new LockException(
          "could not lock '" + config.getName() + "': the store's answer is unknown ("
              + e.getCause().getMessage() + ")",
          e.getCause());
    }
    if (!acquired) {
      slot.free();
      return Optional.empty();
    }
    Tenancy t = new Tenancy(slot, lease, lease.fencingToken().orElse(Long.MIN_VALUE));
    slot.current(t);
    held.add(t);
    t.capAt(start, config.getLockAtMostFor());
    return Optional.of(new LeaseholdLock(config, t, start));
  }

  /** Releases every lock still held and closes the leases, then stops the provider's timer. */
  @Override
  public void close() {
    for (Tenancy t : held) {
      t.end().join();
    }
    slots.values().forEach(Slot::close);
    timer.shutdownNow();
  }

  /**
   * One lock name's holder in this process: a lease object kept across its tenures (so an
   * attempt whose answer was lost is recognised by the next one as its own), and whether a thread
   * of this process is using it now.
   */
  private final class Slot {
    private final String lockName;
    private Lease lease;
    private boolean busy;
    /** The tenancy of this name held now, if any. */
    private Tenancy current;

    Slot(String lockName) {
      this.lockName = lockName;
    }

    /** {@return the lease to acquire with, or null if this process is using the name now} */
    synchronized Lease take(LeaseSettings settings) {
      if (busy) {
        return null;
      }
      if (lease != null && !lease.settings().equals(settings)) {
        lease.close(); // not held (the slot is free): nothing to release
        lease = null;
      }
      if (lease == null) {
        Lease l = backend.newLease(settings);
        l.onLost(
            lost ->
                log.warn(
                    "ShedLock lock '{}' lost its lease: {}; the task still runs unless it checks"
                        + " the lock",
                    lockName,
                    lost));
        lease = l;
      }
      busy = true;
      return lease;
    }

    synchronized void free() {
      busy = false;
    }

    synchronized void current(Tenancy t) {
      current = t;
    }

    synchronized void ended(Tenancy t) {
      if (current == t) {
        current = null;
      }
    }

    /** {@return the current tenancy if its release is due or under way, else null} */
    synchronized Tenancy releaseDue() {
      return current != null && current.releaseDue() ? current : null;
    }

    synchronized void close() {
      if (lease != null) {
        lease.close();
        lease = null;
      }
    }
  }

  private LeaseSettings settingsFor(String name, Duration lockAtMostFor) {
    LeaseSettings s = settingsFor.apply(name);
    Duration ttl = s.ttl();
    if (lockAtMostFor.compareTo(ttl) < 0) {
      // A short lockAtMostFor also bounds how long a dead node keeps the lock; the other
      // settings follow from the shorter TTL by their defaults.
      ttl = lockAtMostFor.compareTo(minimumTtl) > 0 ? lockAtMostFor : minimumTtl;
    }
    LeaseSettings.Builder b =
        ttl.equals(s.ttl())
            ? s.toBuilder()
            : LeaseSettings.builder(s.name(), s.owner()).ttl(ttl).maxClockDrift(s.maxClockDrift());
    return b.acquireRetries(0).build();
  }

  private static String defaultOwner() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      host = "unknown-host";
    }
    return ProcessHandle.current().pid() + "@" + host;
  }

  /**
   * One held lease, shared by a lock and the locks that extend it: the release timers and the one
   * release. Every way out (unlock, cap, close, a failed extend) goes through {@link #end()}.
   */
  final class Tenancy {
    private final Slot slot;
    final Lease lease;
    final long token;
    private ScheduledFuture<?> cap;
    private ScheduledFuture<?> deferred;
    /** When the deferred release (lockAtLeastFor) falls due, nanoTime; 0 when none. */
    private long releaseAt;
    private long capDeadline;
    private CompletableFuture<Void> ended;

    Tenancy(Slot slot, Lease lease, long token) {
      this.slot = slot;
      this.lease = lease;
      this.token = token;
    }

    /**
     * Releases the lease when {@code atMost} has passed since {@code from} (nanoTime).
     *
     * @return false if the tenancy already ended
     */
    synchronized boolean capAt(long from, Duration atMost) {
      if (ended != null) {
        return false;
      }
      if (cap != null) {
        cap.cancel(false);
      }
      capDeadline = from + atMost.toNanos();
      cap = timer.schedule(this::end, Math.max(0, capDeadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      return true;
    }

    /** Whether the cap passed or the tenure ended (locally or in the store). */
    synchronized boolean over() {
      return ended != null || capDeadline - System.nanoTime() <= 0 || !lease.checkAlive();
    }

    /**
     * Keeps the lease until {@code until} (nanoTime), then releases it.
     *
     * @return false if {@code until} has passed: the caller releases now
     */
    synchronized boolean releaseAt(long until) {
      long delay = until - System.nanoTime();
      if (ended != null || delay <= 0) {
        return ended != null;
      }
      deferred = timer.schedule(this::end, delay, TimeUnit.NANOSECONDS);
      releaseAt = until;
      return true;
    }

    /** Whether it was unlocked and its lockAtLeastFor passed, or its release is under way. */
    synchronized boolean releaseDue() {
      return ended != null || (deferred != null && releaseAt - System.nanoTime() <= 0);
    }

    /**
     * Releases the lease and detaches it, once; every caller gets the same future, which
     * completes when the store confirmed (or the lease's operation timeout passed).
     */
    CompletableFuture<Void> end() {
      CompletableFuture<Void> done;
      synchronized (this) {
        if (ended != null) {
          return ended;
        }
        done = ended = new CompletableFuture<>();
        if (cap != null) {
          cap.cancel(false);
        }
        if (deferred != null) {
          deferred.cancel(false);
        }
      }
      try {
        // Releases if still held (a no-op after a loss), waiting for the store at most a bound
        // past the lease's own operation timeout.
        lease.release().get(lease.settings().operationTimeout().multipliedBy(2).plusSeconds(1).toNanos(), TimeUnit.NANOSECONDS);
      } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
        log.warn("The store did not confirm the release of ShedLock lock '{}'; it expires within the TTL", slot.lockName);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        held.remove(this);
        slot.ended(this);
        slot.free();
        done.complete(null);
      }
      return done;
    }
  }

  /** Builds a {@link LeaseholdLockProvider}. */
  public static final class Builder {
    private final LeaseBackend backend;
    private String owner;
    private Duration ttl;
    private Function<String, LeaseSettings> settingsFor;
    private String namePrefix = DEFAULT_NAME_PREFIX;
    private Duration minimumTtl = DEFAULT_MINIMUM_TTL;

    private Builder(LeaseBackend backend) {
      this.backend = Objects.requireNonNull(backend, "backend");
    }

    /**
     * Who holds the locks this provider takes; default {@code pid@host}.
     *
     * @param owner a lease owner name (1–256 characters, no control characters)
     * @return this builder
     */
    public Builder owner(String owner) {
      LeaseSettings.builder("name-check", Objects.requireNonNull(owner, "owner"));
      this.owner = owner;
      return this;
    }

    /**
     * The lease TTL: how long the store keeps a lock after its node stopped renewing; default
     * 15 s. A lock whose {@code lockAtMostFor} is shorter uses that instead.
     *
     * @param ttl as {@link LeaseSettings.Builder#ttl(Duration)} allows
     * @return this builder
     */
    public Builder ttl(Duration ttl) {
      LeaseSettings.builder("name-check", "owner-check").ttl(ttl).build();
      this.ttl = ttl;
      return this;
    }

    /**
     * Full control over each lock's lease settings: called with the lease name ({@code
     * namePrefix + lockName}), it returns the settings; the provider then sets {@code
     * acquireRetries} to 0 and shortens the TTL for a short {@code lockAtMostFor}. Replaces
     * {@link #owner(String)} and {@link #ttl(Duration)}.
     *
     * @param settingsFor lease name to settings
     * @return this builder
     */
    public Builder settings(Function<String, LeaseSettings> settingsFor) {
      this.settingsFor = Objects.requireNonNull(settingsFor, "settingsFor");
      return this;
    }

    /**
     * What goes before each ShedLock lock name to make the lease name; default {@value
     * #DEFAULT_NAME_PREFIX}, so ShedLock's locks do not collide with other leases of the store.
     *
     * @param namePrefix may be empty
     * @return this builder
     */
    public Builder namePrefix(String namePrefix) {
      this.namePrefix = Objects.requireNonNull(namePrefix, "namePrefix");
      return this;
    }

    /**
     * The shortest TTL a short {@code lockAtMostFor} may shorten a lease to; default 1 s, which
     * every backend accepts (etcd counts whole seconds, the core needs 10 ms).
     *
     * @param minimumTtl between 1 ms and 24 h
     * @return this builder
     */
    public Builder minimumTtl(Duration minimumTtl) {
      LeaseSettings.builder("name-check", "owner-check").ttl(minimumTtl).build();
      this.minimumTtl = minimumTtl;
      return this;
    }

    /** {@return the provider} */
    public LeaseholdLockProvider build() {
      return new LeaseholdLockProvider(this);
    }
  }
}
