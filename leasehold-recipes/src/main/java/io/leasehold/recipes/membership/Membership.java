package io.leasehold.recipes.membership;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Scheduler;
import io.leasehold.recipes.internal.SharedScheduler;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A membership registry built on leases only: a process joins a named group with its own data,
 * others list the members and are told of joins and leaves ({@link GroupView}), and a member that
 * crashes, pauses or is cut off leaves when its TTL passes, told first ({@link Member#onLeft}).
 *
 * <p><b>Slots.</b> The lease API cannot list leases, so a group is a fixed set of numbered slots:
 * the leases {@code <group>.member.0} … {@code <group>.member.<maxMembers − 1>} (default 64
 * slots, 1 to 1024). Joining acquires one free slot, trying them in an order derived from the
 * member id (a hash, then the next ones), and attaches the member's data to that tenure; the
 * data therefore goes with the tenure (released, expired, revoked). Observing watches every slot.
 * Everyone who joins or observes one group must use the same {@code maxMembers}.
 *
 * <pre>{@code
 * Member me = Membership.join(backend, "workers", "node-1")
 *     .data(Map.of("address", "10.0.0.7:8080"))
 *     .join().join();
 * me.onLeft(lost -> server.stopServingAsMember());   // before anyone can take the slot
 * GroupView view = Membership.observe(backend, "workers", new GroupListener() {
 *   public void joined(GroupMember m) { router.add(m.memberId(), m.data().get("address")); }
 *   public void left(GroupMember m, LeaseEvent.Type why) { router.remove(m.memberId()); }
 * });
 * }</pre>
 *
 * <p><b>No automatic re-join.</b> A member that was cut off is told it left and stays out: joining
 * again gives it another tenure (a new token, perhaps another slot), which is the application's
 * decision to make once it has stopped acting as the old member. Call {@link #join} again.
 */
public final class Membership {

  /** Default number of slots of a group. */
  public static final int DEFAULT_MAX_MEMBERS = 64;

  /** Largest number of slots of a group: each is one lease, and an observer watches each. */
  public static final int MAX_MAX_MEMBERS = 1024;

  /**
   * The attached key a member writes last, after its data (value: its member id): an observer
   * that reads it knows the data is complete. Reserved: data may not use it.
   */
  public static final String JOINED_KEY = "leasehold.member";

  private static final String SLOT_INFIX = ".member.";

  private static final Logger log = LoggerFactory.getLogger(Membership.class);

  private Membership() {}

  /**
   * Starts a join of {@code group} as {@code memberId}; {@link Joiner#join()} does it.
   *
   * @param backend where the group's slots are leases
   * @param group the group name
   * @param memberId how others see this member: the slot lease's owner name
   * @return a joiner with the defaults described on its setters
   */
  public static Joiner join(LeaseBackend backend, String group, String memberId) {
    return new Joiner(backend, group, memberId);
  }

  /**
   * Observes {@code group} with the default number of slots and the shared scheduler; see {@link
   * GroupView#builder} for the rest.
   *
   * @param backend where the group's slots are leases
   * @param group the group name
   * @param listener told of each join and leave
   * @return the started view
   */
  public static GroupView observe(LeaseBackend backend, String group, GroupListener listener) {
    return GroupView.builder(backend, group).listener(listener).start();
  }

  /**
   * Reads every slot of {@code group} once (one {@link LeaseBackend#read} each, at most {@value
   * #READS_AT_ONCE} at a time): the members now, by slot. A member still writing its data when
   * read is listed with what it has written so far.
   *
   * @param backend where the group's slots are leases
   * @param group the group name
   * @param maxMembers the group's number of slots, 1 to 1024
   * @return the members, by slot; fails as the first failed read fails
   * @throws IllegalArgumentException if the group or maxMembers break the rules
   * @throws UnsupportedOperationException if the backend cannot read lease states
   */
  public static CompletableFuture<List<GroupMember>> list(LeaseBackend backend, String group, int maxMembers) {
    Objects.requireNonNull(backend, "backend");
    checkGroup(group, maxMembers);
    List<CompletableFuture<LeaseState>> reads = new ArrayList<>(maxMembers);
    for (int slot = 0; slot < maxMembers; slot++) {
      reads.add(new CompletableFuture<>());
    }
    // A few at a time, not all 1024 at once: a store may bound the calls one connection has in
    // flight (the core's --max-in-flight-per-connection, 1000 by default), and refused a list of a
    // wide group on a busy connection.
    java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
    for (int i = 0; i < Math.min(READS_AT_ONCE, maxMembers); i++) {
      readNext(backend, group, reads, next, false); // a backend that cannot read throws here
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new))
        .thenApply(
            ignored -> {
              List<GroupMember> members = new ArrayList<>();
              for (int slot = 0; slot < maxMembers; slot++) {
                LeaseState state = reads.get(slot).join();
                if (state.holding().isPresent()) {
                  members.add(member(slot, state.holding().get(), state.attached()));
                }
              }
              return List.copyOf(members);
            });
  }

  /** Slot reads {@link #list} has in flight at once. */
  static final int READS_AT_ONCE = 64;

  /** Reads the next slot not yet read into its place in {@code reads}; when done, the one after. */
  private static void readNext(
      LeaseBackend backend, String group, List<CompletableFuture<LeaseState>> reads,
      java.util.concurrent.atomic.AtomicInteger next, boolean inCallback) {
    int slot = next.getAndIncrement();
    if (slot >= reads.size()) {
      return;
    }
    CompletableFuture<LeaseState> read;
    try {
      read = backend.read(slotName(group, slot));
    } catch (RuntimeException e) {
      if (!inCallback) {
        throw e;
      }
      read = CompletableFuture.failedFuture(e); // its place fails, so the list does
    }
    read.whenComplete(
        (state, error) -> {
          if (error != null) {
            reads.get(slot).completeExceptionally(error);
          } else {
            reads.get(slot).complete(state);
          }
          readNext(backend, group, reads, next, true);
        });
  }

  /**
   * {@return the lease name of slot {@code slot} of {@code group}: {@code <group>.member.<slot>}}
   *
   * @param group the group name
   * @param slot the slot, from 0
   */
  public static String slotName(String group, int slot) {
    return group + SLOT_INFIX + slot;
  }

  // ---------------------------------------------------------------------------------------------

  static GroupMember member(int slot, LeaseHolding h, Map<String, String> attached) {
    Map<String, String> data = attached;
    if (attached.containsKey(JOINED_KEY)) {
      data = new LinkedHashMap<>(attached);
      data.remove(JOINED_KEY);
    }
    return new GroupMember(h.owner(), h.holder(), slot, h.token(), h.since(), data);
  }

  static void checkMaxMembers(int maxMembers) {
    if (maxMembers < 1 || maxMembers > MAX_MAX_MEMBERS) {
      throw new IllegalArgumentException(
          "maxMembers must be between 1 and " + MAX_MAX_MEMBERS + "; was " + maxMembers);
    }
  }

  /** Checks the group name by the lease-name rule applied to its longest slot name. */
  static void checkGroup(String group, int maxMembers) {
    Objects.requireNonNull(group, "group");
    checkMaxMembers(maxMembers);
    if (group.isBlank()) {
      throw new IllegalArgumentException("group must not be blank");
    }
    try {
      LeaseSettings.builder(slotName(group, maxMembers - 1), "check");
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "group '" + group + "' does not make valid slot lease names (" + slotName(group, maxMembers - 1)
              + "): " + e.getMessage(),
          e);
    }
  }

  /** Checks the data as {@link Lease#attach} would, before anything is acquired. */
  static Map<String, String> checkData(Map<String, String> data) {
    Objects.requireNonNull(data, "data");
    Map<String, String> copy = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : data.entrySet()) {
      String key = e.getKey();
      String value = e.getValue();
      if (key == null || value == null) {
        throw new IllegalArgumentException("data must not contain null keys or values; found " + key + "=" + value);
      }
      if (key.isEmpty() || key.length() > 128) {
        throw new IllegalArgumentException("data key must be 1 to 128 characters; was " + key.length());
      }
      for (int i = 0; i < key.length(); i++) {
        char c = key.charAt(i);
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || c == '.' || c == '_' || c == '-')) {
          throw new IllegalArgumentException(
              "data key may contain only A-Z a-z 0-9 . _ -; found '" + c + "' at index " + i + " of '" + key + "'");
        }
      }
      if (key.equals(JOINED_KEY)) {
        throw new IllegalArgumentException("data key '" + JOINED_KEY + "' is reserved for the membership recipe");
      }
      if (value.length() > 4096) {
        throw new IllegalArgumentException(
            "data value of key '" + key + "' must be at most 4096 characters; was " + value.length());
      }
      copy.put(key, value);
    }
    return copy;
  }

  // ---------------------------------------------------------------------------------------------

  /** Settings of one join; every setter checks its value at once, {@link #join()} checks the rest. */
  public static final class Joiner {
    private final LeaseBackend backend;
    private final String group;
    private final String memberId;
    private Map<String, String> data = Map.of();
    private int maxMembers = DEFAULT_MAX_MEMBERS;
    private UnaryOperator<LeaseSettings.Builder> settings = UnaryOperator.identity();
    private Scheduler scheduler = SharedScheduler.INSTANCE;

    private Joiner(LeaseBackend backend, String group, String memberId) {
      this.backend = Objects.requireNonNull(backend, "backend");
      this.group = Objects.requireNonNull(group, "group");
      this.memberId = Objects.requireNonNull(memberId, "memberId");
    }

    /**
     * The member's data, attached to its slot's tenure: keys 1 to 128 of {@code A-Z a-z 0-9 . _
     * -} (not {@value Membership#JOINED_KEY}), values at most 4096 characters. Default: none. A
     * backend that cannot attach keys (Kubernetes) can only join without data.
     *
     * @param data the data
     * @return this joiner
     * @throws IllegalArgumentException if a key or value breaks the rules
     */
    public Joiner data(Map<String, String> data) {
      if (data == null) {
        throw new IllegalArgumentException("data must not be null; pass Map.of() for none");
      }
      this.data = checkData(data);
      return this;
    }

    /**
     * The group's number of slots; the same for everyone in the group. Default 64.
     *
     * @param maxMembers 1 to 1024
     * @return this joiner
     * @throws IllegalArgumentException if out of range
     */
    public Joiner maxMembers(int maxMembers) {
      checkMaxMembers(maxMembers);
      this.maxMembers = maxMembers;
      return this;
    }

    /**
     * Adjusts the slot leases' settings (TTL, heartbeat, …): called with a builder for each slot
     * tried, already set to {@code acquireRetries(0)} (a slot another member holds is skipped, not
     * waited for). Default: the lease defaults (a 15 s TTL).
     *
     * @param settings adjusts the builder and returns it
     * @return this joiner
     */
    public Joiner settings(UnaryOperator<LeaseSettings.Builder> settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /**
     * Where the join's steps and late {@link Member#onLeft} calls run. Default: the shared recipe
     * thread ({@code SharedScheduler}).
     *
     * @param scheduler the scheduler; a virtual one in tests
     * @return this joiner
     */
    public Joiner scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * Joins: acquires a free slot, attaches the data to it, and only then completes. Fails with
     * {@link IllegalStateException} naming the group when every slot is held (nothing is left
     * held), with {@link UnsupportedOperationException} when the backend cannot attach keys and
     * the data is not empty (nothing was acquired), and with the {@link io.leasehold.LeaseException}
     * of an acquire or attach whose outcome is unknown (a slot taken that way is released, or
     * expires after its TTL).
     *
     * @return the member, once joined
     * @throws IllegalArgumentException if the group or member id break the lease-name rules
     */
    public CompletableFuture<Member> join() {
      checkGroup(group, maxMembers);
      if (memberId.isBlank()) {
        throw new IllegalArgumentException("memberId must not be blank");
      }
      LeaseSettings.builder(slotName(group, 0), memberId); // checks the member id as an owner name
      CompletableFuture<Member> joined = new CompletableFuture<>();
      int start = Math.floorMod(spread(memberId.hashCode()), maxMembers);
      trySlot(start, 0, null, joined);
      return joined;
    }

    private static int spread(int h) {
      h ^= h >>> 16;
      h *= 0x45d9f3b;
      return h ^ (h >>> 16);
    }

    /**
     * Tries slot {@code (start + tried) mod maxMembers}. {@code canAttach} is null until the first
     * lease object said whether its backend can attach keys.
     */
    private void trySlot(int start, int tried, Boolean canAttach, CompletableFuture<Member> joined) {
      if (tried == maxMembers) {
        joined.completeExceptionally(
            new IllegalStateException(
                "group '" + group + "' is full: all " + maxMembers + " slots (maxMembers) are held by other"
                    + " members; nothing is held"));
        return;
      }
      int slot = (start + tried) % maxMembers;
      Lease lease;
      Member member;
      boolean attaches;
      try {
        lease = backend.newLease(settings.apply(
            LeaseSettings.builder(slotName(group, slot), memberId).acquireRetries(0)).build());
      } catch (RuntimeException e) {
        joined.completeExceptionally(e);
        return;
      }
      try {
        attaches = canAttach != null ? canAttach : probeAttach(lease);
      } catch (UnsupportedOperationException e) {
        lease.close(); // nothing held yet
        joined.completeExceptionally(e);
        return;
      }
      member = new Member(group, memberId, slot, lease, scheduler);
      CompletableFuture<Boolean> attempt;
      try {
        attempt = lease.acquire();
      } catch (RuntimeException e) {
        attempt = CompletableFuture.failedFuture(e);
      }
      // Off the store's reply thread, as LeaderElection does.
      attempt.whenComplete(
          (won, error) ->
              scheduler.execute(
                  () -> {
                    if (error != null) {
                      discard(lease).whenComplete((v, e) -> joined.completeExceptionally(unwrap(error)));
                    } else if (!won) {
                      discard(lease)
                          .whenComplete((v, e) -> scheduler.execute(() -> trySlot(start, tried + 1, attaches, joined)));
                    } else {
                      attachAll(lease, attaches)
                          .whenComplete(
                              (v, e) -> {
                                if (e != null) {
                                  discard(lease).whenComplete((v2, e2) -> joined.completeExceptionally(unwrap(e)));
                                } else if (!member.joined()) {
                                  IllegalStateException lost =
                                      new IllegalStateException(
                                          "joining group '" + group + "' as " + memberId + ": slot " + slot
                                              + " was lost while the data was written");
                                  discard(lease).whenComplete((v2, e2) -> joined.completeExceptionally(lost));
                                } else {
                                  if (joined.complete(member)) {
                                    log.info("Joined group '{}' as {} in slot {}", group, memberId, slot);
                                  } else {
                                    // The caller gave up on the join (cancelled, timed out): nobody
                                    // holds this Member to close it, so its slot is given back now
                                    // instead of being renewed forever as a ghost member.
                                    log.info("Join of group '{}' as {} was abandoned by its caller; giving slot {} back",
                                        group, memberId, slot);
                                    discard(lease);
                                  }
                                }
                              });
                    }
                  }));
    }

    /**
     * Whether the backend attaches keys, asked of a lease not held yet: one that cannot throws at
     * once; one that can refuses the write (not held), and nothing is written. Throws if the
     * data cannot be written.
     */
    private boolean probeAttach(Lease lease) {
      try {
        lease.attach(JOINED_KEY, memberId).exceptionally(e -> null);
        return true;
      } catch (UnsupportedOperationException e) {
        if (!data.isEmpty()) {
          throw new UnsupportedOperationException(
              "cannot join group '" + group + "' with data: " + e.getMessage(), e);
        }
        return false; // joins without data and without the completion key
      }
    }

    /** Writes the data, then the completion key, one after another. */
    private CompletableFuture<Void> attachAll(Lease lease, boolean attaches) {
      CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
      if (!attaches) {
        return chain;
      }
      for (Map.Entry<String, String> e : data.entrySet()) {
        chain = chain.thenCompose(v -> lease.attach(e.getKey(), e.getValue()));
      }
      return chain.thenCompose(v -> lease.attach(JOINED_KEY, memberId));
    }

    private static CompletableFuture<Void> discard(Lease lease) {
      return lease.release().handle((v, e) -> null).thenRun(lease::close);
    }

    private static Throwable unwrap(Throwable e) {
      return e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
    }
  }
}
