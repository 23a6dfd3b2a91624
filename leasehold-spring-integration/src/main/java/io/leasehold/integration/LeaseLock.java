package io.leasehold.integration;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.Subscription;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.integration.support.locks.DistributedLock;

/**
 * A lock of a {@link LeaseholdLockRegistry}: thread-owned and reentrant within the process, held
 * across processes by a lease.
 *
 * <ul>
 *   <li>The outermost {@code lock()}/{@code tryLock()} of a thread takes a new lease (a fresh
 *       holder) and retries every {@code retryInterval} while another holder has it; the
 *       outermost {@code unlock()} releases it and waits for the store's confirmation.</li>
 *   <li>A nested acquisition confirms the tenure with the store (one round trip). If the lease
 *       was lost, it fails ({@code false}, or {@link CannotAcquireLockException} from {@code
 *       lock()}) and the thread's outer holds are dropped, so the lock never stays stuck on a
 *       thread that believes it lost it; each of the thread's outstanding {@code unlock()} calls
 *       then throws {@link ConcurrentModificationException}. A store that cannot answer the
 *       confirmation does not end the tenure: it stays held until its local safe deadline, as
 *       renewals do.</li>
 *   <li>The outermost {@code unlock()} of a lock whose lease was lost meanwhile releases nothing
 *       and throws {@link ConcurrentModificationException}, as Spring's Redis registry does for an
 *       expired key.</li>
 *   <li>A store whose answer is unknown (unreachable, timeout) makes an outermost acquisition
 *       throw {@link CannotAcquireLockException}, as Redis's and JDBC's registries do.</li>
 *   <li>{@link #lock(Duration)} and {@link #tryLock(Duration, Duration)} (Spring Integration's
 *       {@link DistributedLock}) take the tenure with that TTL instead of the registry's: how long
 *       the store keeps the lock after this process stopped renewing it. The lease renews itself
 *       while held, so the TTL does not bound how long the lock is held, only how soon another
 *       process gets it after this one died. A tenure keeps the TTL of its outermost acquisition:
 *       a nested one that asks for another TTL is refused with {@link
 *       IllegalArgumentException}.</li>
 * </ul>
 *
 * <p>{@link #fencingToken()}, {@link #checkAlive()}, {@link #remaining()} and {@link
 * #onLost(Consumer)} may be called from any thread.
 */
public final class LeaseLock implements DistributedLock {

  private static final Logger log = LoggerFactory.getLogger(LeaseLock.class);

  private final LeaseholdLockRegistry registry;
  private final String key;
  private final String leaseName;
  private final ReentrantLock local = new ReentrantLock();
  private final List<Consumer<LeaseLost>> handlers = new CopyOnWriteArrayList<>();

  /**
   * The holder: one lease object for every tenure of this lock, so that an attempt whose answer
   * was lost (a grant the store made but never confirmed to us) is recognised by the next attempt
   * as this holder's own instead of blocking the name. Made on first use; touched only by the
   * thread that holds {@link #local}.
   */
  private Lease holder;
  /** The holder while a thread holds the lock (a tenure is live or was lost), else null. */
  private volatile Lease lease;
  /** The fencing token of that tenure. */
  private volatile long token;
  /** Why the current tenure was lost, once it was. */
  private volatile LeaseLost lost;
  private volatile long lastLockedAt = System.nanoTime();

  // Guarded by this: a thread whose holds were dropped after a loss, and how many it had.
  private Thread droppedOwner;
  private int droppedHolds;
  private String droppedReason;

  LeaseLock(LeaseholdLockRegistry registry, String key, String leaseName) {
    this.registry = registry;
    this.key = key;
    this.leaseName = leaseName;
  }

  /** {@return the key this lock was obtained with} */
  public String key() {
    return key;
  }

  /** {@return the lease name the lock is held under in the store} */
  public String leaseName() {
    return leaseName;
  }

  @Override
  public void lock() {
    lockWith(null);
  }

  /**
   * As {@link #lock()}, with a tenure whose lease has this TTL instead of the registry's; the
   * lease's other timings follow from it by their defaults (see {@link
   * LeaseholdLockRegistry#LeaseholdLockRegistry(io.leasehold.LeaseBackend, java.util.function.Function,
   * String)}).
   *
   * @param ttl how long the store keeps the lock after this process stopped renewing it
   * @throws IllegalArgumentException if the TTL is out of a lease's range (1 ms – 24 h), or this
   *     thread holds the lock already with a tenure of another TTL
   */
  @Override
  public void lock(Duration ttl) {
    lockWith(Objects.requireNonNull(ttl, "ttl"));
  }

  private void lockWith(Duration ttl) {
    local.lock();
    try {
      acquired(-1, false, ttl);
    } catch (InterruptedException e) {
      throw new AssertionError("an uninterruptible acquisition was interrupted", e);
    }
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    local.lockInterruptibly();
    acquired(-1, true, null);
  }

  @Override
  public boolean tryLock() {
    try {
      return tryLock(0, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return tryLockWith(unit.toNanos(time), null);
  }

  /**
   * As {@link #tryLock(long, TimeUnit)}, with a tenure whose lease has this TTL instead of the
   * registry's; see {@link #lock(Duration)}.
   *
   * @param waitTime how long to keep trying while another holder has the lock
   * @param ttl how long the store keeps the lock after this process stopped renewing it
   * @return whether the lock was acquired within {@code waitTime}
   * @throws InterruptedException if interrupted while waiting
   * @throws IllegalArgumentException if the TTL is out of a lease's range (1 ms – 24 h), or this
   *     thread holds the lock already with a tenure of another TTL
   */
  @Override
  public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
    return tryLockWith(waitTime.toNanos(), Objects.requireNonNull(ttl, "ttl"));
  }

  private boolean tryLockWith(long waitNanos, Duration ttl) throws InterruptedException {
    long deadline = System.nanoTime() + waitNanos;
    if (!local.tryLock(waitNanos, TimeUnit.NANOSECONDS)) {
      return false;
    }
    return acquired(Math.max(0, deadline - System.nanoTime()), true, ttl);
  }

  /**
   * Completes an acquisition once the local lock is held: confirms a held tenure (nested) or
   * takes a new one (outermost). On {@code false} or a throw, this call's local hold is undone.
   *
   * @param timeoutNanos how long to keep trying after the first answer, or -1 for ever
   * @param ttl the TTL asked for, or null for the registry's
   */
  private boolean acquired(long timeoutNanos, boolean interruptible, Duration ttl)
      throws InterruptedException {
    boolean ok = false;
    try {
      if (local.getHoldCount() > 1) {
        Lease held = lease;
        if (ttl != null && held != null && !held.settings().ttl().equals(ttl)) {
          throw new IllegalArgumentException(
              "lock " + key + " is held by this thread with a TTL of " + held.settings().ttl()
                  + "; a nested acquisition cannot change it to " + ttl);
        }
        ok = confirm();
        if (!ok) {
          dropHoldsAfterLoss();
          if (timeoutNanos < 0) {
            throw new CannotAcquireLockException(
                "the lease of lock " + key + " was lost while this thread held it: " + lostText());
          }
        }
        return ok;
      }
      ok = takeTenure(timeoutNanos, interruptible, ttl);
      return ok;
    } finally {
      if (!ok && local.isHeldByCurrentThread()) {
        local.unlock();
      }
    }
  }

  /** Takes a new lease for the outermost hold, retrying while another holder has it. */
  private boolean takeTenure(long timeoutNanos, boolean interruptible, Duration ttl)
      throws InterruptedException {
    synchronized (this) {
      if (droppedOwner == Thread.currentThread()) {
        droppedOwner = null; // a fresh start: the old holds were the caller's to forget
        droppedHolds = 0;
      }
    }
    long deadline = System.nanoTime() + timeoutNanos;
    Lease l = holder(registry.settings(leaseName, ttl));
    try {
      while (true) {
        Boolean granted = await(l.acquire(), l, interruptible);
        if (granted == null) {
          throw new CannotAcquireLockException(
              "the store did not answer whether lock " + key + " was acquired");
        }
        if (granted) {
          install(l);
          return true;
        }
        long pause = l.settings().retryInterval().toNanos();
        if (timeoutNanos >= 0) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return false;
          }
          pause = Math.min(pause, left);
        }
        if (interruptible) {
          TimeUnit.NANOSECONDS.sleep(pause);
        } else {
          LockSupport.parkNanos(pause);
        }
      }
    } catch (ExecutionException e) {
      throw new CannotAcquireLockException(
          "could not acquire lock " + key + ": the store's answer is unknown ("
              + e.getCause().getMessage() + ")",
          e.getCause());
    } catch (InterruptedException e) {
      l.release(); // a grant still in flight is given back once it arrives
      throw e;
    }
  }

  /**
   * The holder for a tenure with these settings. A new TTL needs a new lease object (its settings
   * are fixed), so the old one, which holds nothing now, is closed; a grant it may have had
   * without hearing of it expires after its TTL.
   */
  private Lease holder(LeaseSettings settings) {
    if (holder != null && !holder.settings().equals(settings)) {
      holder.close();
      holder = null;
    }
    if (holder == null) {
      Lease l = registry.newLease(settings);
      l.onLost(
        reason -> {
          lost = reason;
          log.warn("Lock {} lost its lease (token {}): {}", key, token, reason);
          for (Consumer<LeaseLost> h : handlers) {
            try {
              h.accept(reason);
            } catch (RuntimeException e) {
              log.error("An onLost handler of lock {} threw", key, e);
            }
          }
        });
      holder = l;
    }
    return holder;
  }

  private void install(Lease l) {
    lost = null;
    token = l.fencingToken().orElse(Long.MIN_VALUE);
    lease = l;
    lastLockedAt = System.nanoTime();
  }

  /**
   * Whether the current tenure is still held, confirmed with the store where it can answer.
   * Called by the owner thread only.
   */
  boolean confirm() {
    Lease l = lease;
    if (l == null || !l.checkAlive()) {
      return false;
    }
    try {
      // Held: one round trip that renews the tenure. A tenure the store reports gone is lost,
      // and the engine then starts a fresh one with another token: not the one we hold.
      Boolean confirmed = await(l.acquire(), l, false);
      if (confirmed != null && !confirmed) {
        return false;
      }
    } catch (ExecutionException | InterruptedException unknown) {
      // The store did not answer: the tenure stays valid until its safe deadline.
    }
    return l.checkAlive() && l.fencingToken().orElse(Long.MIN_VALUE) == token;
  }

  /** After a nested acquisition found the lease lost: ends the tenure, drops every hold. */
  private void dropHoldsAfterLoss() {
    int outer = local.getHoldCount() - 1; // the failing call's own hold is undone by the caller
    String reason = lostText();
    endTenure(); // a fresh tenure the confirmation may have started is not ours: give it back
    synchronized (this) {
      droppedOwner = Thread.currentThread();
      droppedHolds = outer;
      droppedReason = reason;
    }
    for (int i = 0; i < outer; i++) {
      local.unlock();
    }
  }

  @Override
  public void unlock() {
    if (!local.isHeldByCurrentThread()) {
      synchronized (this) {
        if (droppedOwner == Thread.currentThread() && droppedHolds > 0) {
          if (--droppedHolds == 0) {
            droppedOwner = null;
          }
          throw lostException(droppedReason);
        }
      }
      throw new IllegalStateException("the current thread does not hold lock " + key);
    }
    if (local.getHoldCount() > 1) {
      local.unlock();
      return;
    }
    try {
      Lease l = lease;
      boolean held =
          l != null && l.checkAlive() && l.fencingToken().orElse(Long.MIN_VALUE) == token;
      String reason = lostText();
      endTenure();
      if (!held) {
        throw lostException(reason);
      }
    } finally {
      local.unlock();
    }
  }

  /** Releases the tenure (if still held) and waits for the store, at most one timeout. */
  private void endTenure() {
    Lease l = lease;
    lease = null;
    lastLockedAt = System.nanoTime();
    if (l != null) {
      try {
        l.release().get(l.settings().operationTimeout().multipliedBy(2).plusSeconds(1).toNanos(), TimeUnit.NANOSECONDS);
      } catch (ExecutionException | TimeoutException e) {
        log.warn("The store did not confirm the release of lock {}; it expires within the TTL", key);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private String lostText() {
    LeaseLost reason = lost;
    return reason != null ? reason.toString() : "the local safe deadline passed";
  }

  private ConcurrentModificationException lostException(String reason) {
    return new ConcurrentModificationException(
        "lock " + key + " was lost before unlock(): " + reason + ". The integrity of data"
            + " protected by this lock may have been compromised.");
  }

  /**
   * Waits for a lease operation, at most a bound well past what the engine itself allows it (its
   * operation timeout), so that a frozen backend cannot hang a lock call for ever.
   *
   * @return the answer, or null if none came within the bound
   */
  private static Boolean await(CompletableFuture<Boolean> f, Lease l, boolean interruptible)
      throws ExecutionException, InterruptedException {
    long deadline =
        System.nanoTime() + l.settings().operationTimeout().multipliedBy(2).plusSeconds(1).toNanos();
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          return null;
        } catch (InterruptedException e) {
          if (interruptible) {
            throw e;
          }
          interrupted = true; // keep waiting; the caller sees the flag afterwards
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** {@return the TTL of the tenure held now, or null when none is} */
  Duration heldTtl() {
    Lease l = lease;
    return l != null ? l.settings().ttl() : null;
  }

  /** {@return whether the current thread holds this lock} */
  public boolean isHeldByCurrentThread() {
    return local.isHeldByCurrentThread();
  }

  /**
   * Whether the lease behind this lock is held now, by local knowledge only (no I/O): never true
   * past the lease's local safe deadline. Gate each irreversible step on it.
   *
   * @return whether a thread of this process holds the lock and its lease is alive
   */
  public boolean checkAlive() {
    Lease l = lease;
    return l != null && l.checkAlive();
  }

  /**
   * The fencing token of the tenure now held, or empty when {@link #checkAlive()} is false. Each
   * tenure's token is greater than every earlier tenure's of this lease name: pass it to the
   * resource the lock protects, so it can reject a holder that resumed after its lease ended.
   *
   * @return the token
   */
  public OptionalLong fencingToken() {
    Lease l = lease;
    return l != null ? l.fencingToken() : OptionalLong.empty();
  }

  /** {@return time left until the local safe deadline, or zero when not held} */
  public Duration remaining() {
    Lease l = lease;
    return l != null ? l.remaining() : Duration.ZERO;
  }

  /**
   * Registers a handler called once per unexpected loss of a tenure of this lock (not for
   * {@code unlock()}), on the backend's callback thread, after {@link #checkAlive()} turned false:
   * stop the protected work at once.
   *
   * @param handler called with the reason
   * @return removes the handler
   */
  public Subscription onLost(Consumer<LeaseLost> handler) {
    handlers.add(Objects.requireNonNull(handler, "handler"));
    return () -> handlers.remove(handler);
  }

  /**
   * Retires this lock if no thread holds it and it was last used {@code ageNanos} before {@code
   * now}: its lease object is closed. A thread that still has this object can lock it again; it
   * then makes a new lease object.
   */
  boolean retireIfUnused(long now, long ageNanos) {
    // isLocked first: tryLock would succeed reentrantly for a thread that holds the lock.
    if (local.isLocked() || !local.tryLock()) {
      return false;
    }
    try {
      if (now - lastLockedAt <= ageNanos) {
        return false;
      }
      if (holder != null) {
        holder.close();
        holder = null;
      }
      return true;
    } finally {
      local.unlock();
    }
  }

  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("conditions are not supported by lease locks");
  }

  @Override
  public String toString() {
    Lease l = lease;
    return "LeaseLock[" + key + (l != null ? ", " + l : ", not held") + ']';
  }
}
