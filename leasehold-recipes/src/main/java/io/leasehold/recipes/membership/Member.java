package io.leasehold.recipes.membership;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.Subscription;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process's membership of a group, from {@link Membership.Joiner#join()}: one slot lease,
 * held with the member's data attached. It keeps the lease's rule: {@link #checkAlive()} is never
 * {@code true} past the slot's local safe deadline, and {@link #onLeft} handlers are called at
 * that deadline (or when the store says the tenure is gone), before anyone else can take the slot
 * — a member that is cut off, or paused and resumed, is told it left before another process can
 * join in its place.
 */
public final class Member implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Member.class);

  private final String group;
  private final String memberId;
  private final int slot;
  private final Lease lease;
  private final Scheduler scheduler;
  private final List<Consumer<LeaseLost>> handlers = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();

  // Guarded by lock.
  private LeaseLost left; // the loss, once the slot was lost
  private long token = -1; // the tenure's token, once joined

  /** Registers the loss relay before the slot is acquired, so no loss can slip past it. */
  Member(String group, String memberId, int slot, Lease lease, Scheduler scheduler) {
    this.group = group;
    this.memberId = memberId;
    this.slot = slot;
    this.lease = lease;
    this.scheduler = scheduler;
    lease.onLost(this::lost);
  }

  /** {@return whether it still holds the slot it acquired}, and takes its token: the join is done. */
  boolean joined() {
    OptionalLong t = lease.fencingToken();
    synchronized (lock) {
      if (t.isEmpty() || left != null) {
        return false;
      }
      token = t.getAsLong();
      return true;
    }
  }

  /** {@return the group this member joined} */
  public String group() {
    return group;
  }

  /** {@return the member id it joined with} */
  public String memberId() {
    return memberId;
  }

  /** {@return the slot it holds: its lease is {@code Membership.slotName(group, slot)}} */
  public int slot() {
    return slot;
  }

  /** {@return the fencing token of its tenure of the slot} */
  public long token() {
    synchronized (lock) {
      return token;
    }
  }

  /** {@return the slot's lease, for its settings and {@link Lease#remaining()}; do not release it} */
  public Lease lease() {
    return lease;
  }

  /**
   * Whether this process is still a member: {@link Lease#checkAlive()} of its slot. Local, no
   * I/O; never {@code true} past the slot's local safe deadline, even in a paused process.
   *
   * @return whether it still holds its slot
   */
  public boolean checkAlive() {
    return lease.checkAlive();
  }

  /**
   * Registers a handler called once when this member leaves against its will: its slot's lease
   * was lost (the TTL passed without a renewal — cut off, paused —, taken over, or revoked). It
   * runs as the lease's {@link Lease#onLost} handlers do, on the backend's callback thread, before
   * the store can hand the slot to anyone else: stop acting as a member at once. Not called for
   * {@link #leave()} or {@link #close()}. A handler registered after the member left is called at
   * once, on the joiner's scheduler. There is no automatic re-join: join again if you mean to.
   *
   * @param handler called with the reason
   * @return removes the handler
   */
  public Subscription onLeft(Consumer<LeaseLost> handler) {
    Objects.requireNonNull(handler, "handler");
    handlers.add(handler);
    LeaseLost already;
    synchronized (lock) {
      already = left;
    }
    if (already != null && handlers.remove(handler)) {
      scheduler.execute(() -> call(handler, already));
    }
    return () -> handlers.remove(handler);
  }

  private void lost(LeaseLost reason) {
    synchronized (lock) {
      if (left != null) {
        return;
      }
      left = reason;
    }
    log.warn("Left group '{}' (member {}, slot {}): {}", group, memberId, slot, reason);
    for (Consumer<LeaseLost> h : handlers) {
      if (handlers.remove(h)) {
        call(h, reason);
      }
    }
  }

  private void call(Consumer<LeaseLost> handler, LeaseLost reason) {
    try {
      handler.accept(reason);
    } catch (RuntimeException | Error e) {
      log.error("An onLeft handler of group '{}' (member {}) threw", group, memberId, e);
    }
  }

  /**
   * Leaves the group: releases the slot (its data goes with it) and closes its lease. Observers
   * see {@code RELEASED}. Does not call {@link #onLeft} handlers.
   *
   * @return completes once the store confirmed the release
   */
  public CompletableFuture<Void> leave() {
    return lease.release().whenComplete((v, e) -> lease.close());
  }

  /** Leaves, waiting at most one operation timeout for the store's confirmation; idempotent. */
  @Override
  public void close() {
    lease.close();
  }

  @Override
  public String toString() {
    return "Member{group='" + group + "', " + memberId + ", slot " + slot + ", token " + token()
        + (checkAlive() ? "" : ", left") + '}';
  }
}
