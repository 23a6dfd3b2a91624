package io.leasehold.recipes.membership;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseState;
import io.leasehold.Scheduler;
import io.leasehold.Subscription;
import io.leasehold.recipes.internal.SharedScheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The members of a group, kept current by {@linkplain LeaseBackend#observe observing} each of its
 * slots (see {@link Membership}), and a {@link GroupListener} told of each join and leave.
 *
 * <p>A slot's new holder is reported as {@code joined} once its data is complete: the view reads
 * the slot ({@link LeaseBackend#read}) and finds the key the joiner writes after its data ({@value
 * Membership#JOINED_KEY}). An observer can see a slot acquired before the joiner has written, so
 * it reads again after a backoff (50 ms doubling to 1 s, on the view's scheduler) until the key
 * is there, or until {@link Builder#dataWait(Duration) dataWait} has passed (then it reports the
 * member with the data written so far: a backend that cannot attach keys, a joiner that is slow).
 * A joiner that loses its slot before it completes is never reported. When the view starts, the
 * members already there are reported as {@code joined}.
 *
 * <p>{@code GAP} events (changes missed while disconnected) are reconciled with the state re-read
 * after the gap: a member that is no longer there is reported as {@code left} ({@code GAP}), a new
 * holder as {@code joined}. Like every observation this is how to learn quickly, never what
 * safety rests on: a member itself relies on {@link Member#checkAlive()} and {@link Member#onLeft}.
 */
public final class GroupView implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(GroupView.class);

  private static final long FIRST_RETRY = TimeUnit.MILLISECONDS.toNanos(50);
  private static final long MAX_RETRY = TimeUnit.SECONDS.toNanos(1);

  private final LeaseBackend backend;
  private final String group;
  private final int maxMembers;
  private final GroupListener listener;
  private final Scheduler scheduler;
  private final long dataWaitNanos;
  private final Slot[] slots;
  private final List<Subscription> subscriptions = new ArrayList<>();
  private final Object lock = new Object();
  private final Queue<Runnable> calls = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean draining = new AtomicBoolean();
  private volatile boolean closed;

  private GroupView(Builder b) {
    this.backend = b.backend;
    this.group = b.group;
    this.maxMembers = b.maxMembers;
    this.listener = b.listener;
    this.scheduler = b.scheduler;
    this.dataWaitNanos = b.dataWait.toNanos();
    this.slots = new Slot[maxMembers];
    for (int i = 0; i < maxMembers; i++) {
      slots[i] = new Slot(i);
    }
  }

  /**
   * Starts building a view of {@code group}.
   *
   * @param backend where the group's slots are leases
   * @param group the group name
   * @return a builder with the defaults described on its setters
   */
  public static Builder builder(LeaseBackend backend, String group) {
    return new Builder(backend, group);
  }

  /** {@return the group observed} */
  public String group() {
    return group;
  }

  /**
   * The members as far as this view knows now, by slot: those reported {@code joined} and not
   * yet {@code left}.
   *
   * @return an unmodifiable snapshot
   */
  public List<GroupMember> members() {
    List<GroupMember> members = new ArrayList<>();
    synchronized (lock) {
      for (Slot s : slots) {
        if (s.reported != null) {
          members.add(s.reported);
        }
      }
    }
    return List.copyOf(members);
  }

  private GroupView start() {
    try {
      for (Slot s : slots) {
        Subscription sub = backend.observe(Membership.slotName(group, s.index), e -> onEvent(s, e));
        synchronized (lock) {
          subscriptions.add(sub);
        }
      }
    } catch (RuntimeException e) {
      close(); // nothing half-made
      throw e;
    }
    return this;
  }

  // ---------------------------------------------------------------------------------------------

  /** One observed event of slot {@code s}, on the backend's callback thread, in order. */
  private void onEvent(Slot s, LeaseEvent event) {
    synchronized (lock) {
      if (closed) {
        return;
      }
      switch (event.type()) {
        case CURRENT, GAP -> {
          LeaseHolding now = event.holding().orElse(null);
          if (now != null && (same(s.reported, now) || sameHolding(s.pending, now))) {
            return; // nothing changed
          }
          end(s, LeaseEvent.Type.GAP);
          if (now != null) {
            fetch(s, now);
          }
        }
        case ACQUIRED, TAKEN_OVER -> {
          LeaseHolding now = event.holding().orElseThrow();
          if (same(s.reported, now) || sameHolding(s.pending, now)) {
            return; // the same tenure told again (an observer that resumed): nothing changed
          }
          end(s, LeaseEvent.Type.TAKEN_OVER);
          fetch(s, now);
        }
        case RELEASED, EXPIRED, REVOKED -> end(s, event.type());
      }
    }
  }

  /** Ends what slot {@code s} had: a reported member leaves; a pending one is forgotten. Under lock. */
  private void end(Slot s, LeaseEvent.Type why) {
    s.generation++;
    s.pending = null;
    s.cancelRetry.cancel();
    s.cancelRetry = Scheduler.Cancellable.NONE;
    GroupMember gone = s.reported;
    if (gone != null) {
      s.reported = null;
      deliver(() -> listener.left(gone, why));
    }
  }

  /** Reads slot {@code s} for the data of {@code holding}. Under lock. */
  private void fetch(Slot s, LeaseHolding holding) {
    s.pending = holding;
    s.waited = 0;
    s.nextRetry = FIRST_RETRY;
    read(s, s.generation);
  }

  private void read(Slot s, int generation) {
    try {
      backend.read(Membership.slotName(group, s.index))
          .whenComplete((state, error) -> scheduler.execute(() -> fetched(s, generation, state, error)));
    } catch (RuntimeException e) {
      scheduler.execute(() -> fetched(s, generation, null, e));
    }
  }

  private void fetched(Slot s, int generation, LeaseState state, Throwable error) {
    synchronized (lock) {
      if (closed || s.generation != generation || s.pending == null) {
        return; // the slot changed meanwhile; that event started over
      }
      LeaseHolding pending = s.pending;
      LeaseHolding stored = state == null ? null : state.holding().orElse(null);
      boolean sameTenure = sameHolding(stored, pending);
      if (stored != null && !sameTenure && stored.token() > pending.token()) {
        return; // it has already changed in the store: the event that says so follows
      }
      // Otherwise the read is of this tenure, or older than the event (free, or an earlier
      // tenure: a replica that lags behind the one that sent the event). No event follows an
      // old read, so it is read again like incomplete data, never left pending.
      boolean complete = sameTenure && state.attached().containsKey(Membership.JOINED_KEY);
      if (!complete && s.waited < dataWaitNanos) {
        if (error != null) {
          log.debug("Reading slot {} of group '{}' failed; reading again: {}", s.index, group, error.toString());
        }
        long delay = s.nextRetry;
        s.waited += delay;
        s.nextRetry = Math.min(MAX_RETRY, delay * 2);
        s.cancelRetry = scheduler.schedule(() -> retry(s, generation), delay);
        return;
      }
      GroupMember m =
          Membership.member(s.index, pending, sameTenure ? state.attached() : java.util.Map.of());
      s.pending = null;
      s.reported = m;
      deliver(() -> listener.joined(m));
    }
  }

  private void retry(Slot s, int generation) {
    synchronized (lock) {
      if (closed || s.generation != generation) {
        return;
      }
    }
    read(s, generation);
  }

  private static boolean same(GroupMember m, LeaseHolding h) {
    return m != null && m.token() == h.token() && m.holder().equals(h.holder());
  }

  private static boolean sameHolding(LeaseHolding a, LeaseHolding b) {
    return a != null && b != null && a.token() == b.token() && a.holder().equals(b.holder());
  }

  /** Queues a listener call (under lock, so in the order of the changes) and runs the queue. */
  private void deliver(Runnable call) {
    calls.add(call);
    scheduler.execute(this::drain);
  }

  private void drain() {
    while (!calls.isEmpty() && draining.compareAndSet(false, true)) {
      try {
        for (Runnable call = calls.poll(); call != null; call = calls.poll()) {
          try {
            call.run();
          } catch (RuntimeException | Error e) {
            log.error("A group listener of group '{}' threw", group, e);
          }
        }
      } finally {
        draining.set(false);
      }
    }
  }

  /** Stops observing; no listener call follows. Idempotent. */
  @Override
  public void close() {
    List<Subscription> subs;
    synchronized (lock) {
      closed = true;
      subs = List.copyOf(subscriptions);
      subscriptions.clear();
      for (Slot s : slots) {
        s.cancelRetry.cancel();
      }
    }
    subs.forEach(Subscription::cancel);
    calls.clear();
  }

  @Override
  public String toString() {
    return "GroupView{group='" + group + "', " + members().size() + " members}";
  }

  // ---------------------------------------------------------------------------------------------

  /** What the view knows of one slot. Guarded by the view's lock. */
  private static final class Slot {
    final int index;
    GroupMember reported; // told joined, not yet left
    LeaseHolding pending; // acquired, data being read
    int generation; // counts changes: a read answered after one is ignored
    long waited; // nanos of backoff spent waiting for the data
    long nextRetry;
    Scheduler.Cancellable cancelRetry = Scheduler.Cancellable.NONE;

    Slot(int index) {
      this.index = index;
    }
  }

  /** Settings of a {@link GroupView}; every setter checks its value at once. */
  public static final class Builder {
    private final LeaseBackend backend;
    private final String group;
    private int maxMembers = Membership.DEFAULT_MAX_MEMBERS;
    private GroupListener listener = new GroupListener() {};
    private Scheduler scheduler = SharedScheduler.INSTANCE;
    private Duration dataWait = Duration.ofSeconds(15);

    private Builder(LeaseBackend backend, String group) {
      this.backend = Objects.requireNonNull(backend, "backend");
      this.group = Objects.requireNonNull(group, "group");
    }

    /**
     * The group's number of slots, as its members joined with. Default 64.
     *
     * @param maxMembers 1 to 1024
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder maxMembers(int maxMembers) {
      Membership.checkMaxMembers(maxMembers);
      this.maxMembers = maxMembers;
      return this;
    }

    /**
     * Told of each join and leave. Default: none (use {@link GroupView#members()}).
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(GroupListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Where reads are retried and the listener is called. Default: the shared recipe thread ({@code SharedScheduler}).
     *
     * @param scheduler the scheduler; a virtual one in tests
     * @return this builder
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * How long to keep reading a new holder's slot for its complete data before reporting it
     * with what is there. Default 15 s, the default TTL (a joiner that crashes meanwhile loses
     * the slot within its TTL and is never reported). Zero reports at once.
     *
     * @param dataWait 0 to 10 minutes
     * @return this builder
     * @throws IllegalArgumentException if out of range
     */
    public Builder dataWait(Duration dataWait) {
      Objects.requireNonNull(dataWait, "dataWait");
      if (dataWait.isNegative() || dataWait.compareTo(Duration.ofMinutes(10)) > 0) {
        throw new IllegalArgumentException("dataWait must be between 0 and 10m; was " + dataWait);
      }
      this.dataWait = dataWait;
      return this;
    }

    /**
     * Observes every slot and returns the view; its listener hears of the members already there
     * as {@code joined}.
     *
     * @return the started view
     * @throws IllegalArgumentException if the group name breaks the rules
     * @throws UnsupportedOperationException if the backend cannot observe leases
     */
    public GroupView start() {
      Membership.checkGroup(group, maxMembers);
      return new GroupView(this).start();
    }
  }
}
