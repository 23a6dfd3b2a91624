package io.leasehold.shedlock;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;

/**
 * A ShedLock lock held as a Leasehold lease, as {@link LeaseholdLockProvider} returns it. Beyond
 * ShedLock's {@link SimpleLock} it tells whether the lease is still held and gives the tenure's
 * fencing token, which stays the same across {@link #extend(Duration, Duration)}.
 */
public final class LeaseholdLock extends AbstractSimpleLock {

  private final LeaseholdLockProvider.Tenancy tenancy;
  private final long startedAt;

  LeaseholdLock(
      LockConfiguration config, LeaseholdLockProvider.Tenancy tenancy, long startedAt) {
    super(config);
    this.tenancy = tenancy;
    this.startedAt = startedAt;
  }

  /**
   * Whether the lease behind this lock is still held, by local knowledge (no I/O): false once its
   * {@code lockAtMostFor} passed, it was released, or the lease was lost.
   *
   * @return whether the task may still act as the lock's holder
   */
  public boolean checkAlive() {
    return !tenancy.over();
  }

  /**
   * The fencing token of the lease's tenure, or empty once {@link #checkAlive()} is false. Pass it
   * to the resource the task writes, so that it can reject a node that resumed too late.
   *
   * @return the token
   */
  public OptionalLong fencingToken() {
    return checkAlive() ? OptionalLong.of(tenancy.token) : OptionalLong.empty();
  }

  @Override
  protected void doUnlock() {
    long atLeastUntil = startedAt + lockConfiguration.getLockAtLeastFor().toNanos();
    if (!tenancy.releaseAt(atLeastUntil)) {
      tenancy.end().join(); // back only once the store confirmed, so the next lock() can succeed
    }
  }

  @Override
  protected Optional<SimpleLock> doExtend(LockConfiguration newConfig) {
    long now = System.nanoTime();
    if (tenancy.over()) {
      tenancy.end().join();
      return Optional.empty();
    }
    boolean confirmed;
    try {
      // One round trip that renews the tenure, so a lock the store already gave away is not
      // extended on local belief. A fresh tenure after a loss has another token: not ours.
      confirmed = tenancy.lease.acquire().get();
    } catch (InterruptedException e) {
      tenancy.end().join();
      Thread.currentThread().interrupt();
      throw new LockException("interrupted while extending '" + newConfig.getName() + "'", e);
    } catch (ExecutionException e) {
      // Unknown outcome: the lease stays valid until its safe deadline and keeps renewing.
      confirmed = tenancy.lease.checkAlive();
    }
    OptionalLong token = tenancy.lease.fencingToken();
    if (!confirmed
        || token.isEmpty()
        || token.getAsLong() != tenancy.token
        || !tenancy.capAt(now, newConfig.getLockAtMostFor())
        || tenancy.over()) {
      tenancy.end().join();
      return Optional.empty();
    }
    return Optional.of(new LeaseholdLock(newConfig, tenancy, now));
  }

  @Override
  public String toString() {
    return "LeaseholdLock{" + lockConfiguration.getName() + ", token=" + tenancy.token
        + (checkAlive() ? ", held" : ", not held") + '}';
  }
}
