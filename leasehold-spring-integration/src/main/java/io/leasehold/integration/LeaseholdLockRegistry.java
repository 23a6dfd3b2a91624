package io.leasehold.integration;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration lock registry over any Leasehold backend: {@link #obtain(Object)} gives a
 * {@link LeaseLock} per key, a thread-owned reentrant {@link java.util.concurrent.locks.Lock}
 * whose outermost acquisition takes a lease named {@code namePrefix + key} and whose outermost
 * {@code unlock()} releases it.
 *
 * <p>What a Redis or JDBC registry user can count on holds here too: one thread owns a lock at a
 * time within the process, {@code lock()} is reentrant, {@code unlock()} by another thread fails,
 * and {@code unlock()} of a lock whose lease was lost meanwhile throws {@link
 * java.util.ConcurrentModificationException}. Beyond them: the lease renews itself in the
 * background (no renewal scheduler to configure), a reentrant {@code lock()}/{@code tryLock()}
 * confirms the tenure with the store and fails once it was lost, and the lock gives the tenure's
 * {@linkplain LeaseLock#fencingToken() fencing token}. Works with Spring's {@code
 * LockRegistryLeaderInitiator}, whose heartbeat is exactly such a reentrant {@code tryLock()}.
 *
 * <p>The locks are Spring Integration {@link org.springframework.integration.support.locks.DistributedLock
 * DistributedLock}s: {@code lock(ttl)} and {@code tryLock(waitTime, ttl)} take a tenure with
 * another TTL than the registry's (see {@link LeaseLock#lock(Duration)}). No renewal scheduler is
 * needed ({@link #setRenewalTaskScheduler} keeps Spring's no-op): each lease renews itself.
 *
 * <p>Thread-safe. The registry owns no threads; the backend (owned by the caller) does the
 * renewing, and closing it releases every lease the registry took.
 */
public final class LeaseholdLockRegistry
    implements ExpirableLockRegistry<LeaseLock>, RenewableLockRegistry<LeaseLock> {

  private final LeaseBackend backend;
  private final Function<String, LeaseSettings> settingsFor;
  private final String namePrefix;
  private final Map<String, LeaseLock> locks = new ConcurrentHashMap<>();

  /**
   * A registry whose leases are held as {@code owner} with the given TTL, named after the keys.
   *
   * @param backend where the leases live; the caller keeps owning it
   * @param owner the lease owner name, for example the host or pod name
   * @param ttl how long the store keeps a lock after its holder stopped renewing
   */
  public LeaseholdLockRegistry(LeaseBackend backend, String owner, Duration ttl) {
    this(backend, name -> LeaseSettings.builder(name, owner).ttl(ttl).build(), "");
    LeaseSettings.builder("name-check", owner).ttl(ttl).build(); // bad values fail here, not later
  }

  /**
   * A registry with full control over each lease's settings.
   *
   * @param backend where the leases live; the caller keeps owning it
   * @param settingsFor lease name ({@code namePrefix + key}) to its settings; the registry sets
   *     {@code acquireRetries} to 0 itself, since it retries in {@code lock()} and {@code tryLock}.
   *     A {@code lock(ttl)} or {@code tryLock(waitTime, ttl)} with another TTL keeps the owner and
   *     {@code maxClockDrift} of these settings, and the other timings follow from that TTL by
   *     their defaults (a heartbeat or timeout chosen for one TTL may not fit another)
   * @param namePrefix what goes before each key to make the lease name; may be empty
   */
  public LeaseholdLockRegistry(
      LeaseBackend backend, Function<String, LeaseSettings> settingsFor, String namePrefix) {
    this.backend = Objects.requireNonNull(backend, "backend");
    this.settingsFor = Objects.requireNonNull(settingsFor, "settingsFor");
    this.namePrefix = Objects.requireNonNull(namePrefix, "namePrefix");
  }

  /**
   * The lock for {@code lockKey}: the same object for the same key until {@link
   * #expireUnusedOlderThan(long)} drops it.
   *
   * @param lockKey a {@link String}
   * @return the lock
   * @throws IllegalArgumentException if the key is not a String, or makes an invalid lease name
   */
  @Override
  public LeaseLock obtain(Object lockKey) {
    if (!(lockKey instanceof String key)) {
      throw new IllegalArgumentException(
          "lockKey must be a String; was " + (lockKey == null ? "null" : lockKey.getClass().getName()));
    }
    return locks.computeIfAbsent(key, k -> new LeaseLock(this, k, namePrefix + k));
  }

  /**
   * Confirms with the store that the current thread's lock on {@code lockKey} is still held (one
   * round trip, which renews it). Renewal needs no call: the lease renews itself.
   *
   * @param lockKey the key
   * @throws IllegalStateException if the current thread does not hold the lock, or its lease was
   *     lost
   */
  @Override
  public void renewLock(Object lockKey) {
    confirmHeld(heldByCurrentThread(lockKey));
  }

  /**
   * As {@link #renewLock(Object)}, for a caller that names the TTL it expects the tenure to have.
   * A held lease keeps the TTL it was acquired with: the store renews it by that TTL, and the
   * lease renews itself, so the lock does not run out while this process lives. To hold a lock
   * with another TTL, take it with {@link LeaseLock#lock(Duration)} or {@link
   * LeaseLock#tryLock(Duration, Duration)}.
   *
   * @param lockKey the key
   * @param ttl the tenure's TTL
   * @throws IllegalStateException if the current thread does not hold the lock, or its lease was
   *     lost
   * @throws IllegalArgumentException if the tenure was acquired with another TTL
   */
  @Override
  public void renewLock(Object lockKey, Duration ttl) {
    Objects.requireNonNull(ttl, "ttl");
    LeaseLock lock = heldByCurrentThread(lockKey);
    Duration held = lock.heldTtl();
    if (held != null && !held.equals(ttl)) {
      throw new IllegalArgumentException(
          "the lock at " + lockKey + " is held with a TTL of " + held + ", which a renewal"
              + " cannot change to " + ttl + "; acquire it with lock(ttl) for another TTL");
    }
    confirmHeld(lock);
  }

  private LeaseLock heldByCurrentThread(Object lockKey) {
    LeaseLock lock = lockKey instanceof String key ? locks.get(key) : null;
    if (lock == null || !lock.isHeldByCurrentThread()) {
      throw new IllegalStateException("the current thread does not hold the lock at " + lockKey);
    }
    return lock;
  }

  private static void confirmHeld(LeaseLock lock) {
    Object lockKey = lock.key();
    if (!lock.confirm()) {
      throw new IllegalStateException(
          "the lease of lock " + lockKey + " was lost; the integrity of data protected by this"
              + " lock may have been compromised");
    }
  }

  /**
   * Forgets locks not locked now and last locked more than {@code age} milliseconds ago. A
   * thread that still has such a lock object can use it: it takes its own lease, which the store
   * keeps exclusive against the registry's new object for the same key.
   *
   * @param age in milliseconds
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    long now = System.nanoTime();
    long ageNanos = Duration.ofMillis(age).toNanos();
    locks.values().removeIf(lock -> lock.retireIfUnused(now, ageNanos));
  }

  /**
   * The settings of a tenure of {@code leaseName}: the registry's, or with {@code ttl} (null for
   * the registry's own).
   */
  LeaseSettings settings(String leaseName, Duration ttl) {
    LeaseSettings s = settingsFor.apply(leaseName);
    LeaseSettings.Builder b =
        ttl == null || ttl.equals(s.ttl())
            ? s.toBuilder()
            : LeaseSettings.builder(s.name(), s.owner()).ttl(ttl).maxClockDrift(s.maxClockDrift());
    return b.acquireRetries(0).build();
  }

  Lease newLease(LeaseSettings settings) {
    return backend.newLease(settings);
  }

  @Override
  public String toString() {
    return "LeaseholdLockRegistry[" + backend.uri() + ", prefix '" + namePrefix + "']";
  }
}
