package io.leasehold.recipes.membership;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseState;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.recipes.Cluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The membership registry on the memory store, on virtual time. Each member is
 * a process of its own (a connection that can be cut off, paused); the observer is another.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MembershipTest {

  private static final Duration TTL = Cluster.TTL;

  private final Cluster cluster = new Cluster();
  private final List<MemoryBackend> processes = new ArrayList<>();
  /** What happened, in the order it happened (every callback runs as virtual time advances). */
  private final List<String> events = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeAll() {
    processes.forEach(MemoryBackend::close);
  }

  private MemoryBackend process() {
    MemoryBackend b = cluster.store.connect();
    processes.add(b);
    return b;
  }

  private CompletableFuture<Member> join(MemoryBackend backend, String id, int maxMembers) {
    return Membership.join(backend, "workers", id)
        .data(Map.of("address", id + ":8080"))
        .maxMembers(maxMembers)
        .settings(b -> b.ttl(TTL))
        .scheduler(cluster.scheduler())
        .join();
  }

  private GroupView observe(int maxMembers) {
    return GroupView.builder(process(), "workers")
        .maxMembers(maxMembers)
        .scheduler(cluster.scheduler())
        .listener(
            new GroupListener() {
              @Override
              public void joined(GroupMember m) {
                events.add("observer: joined " + m.memberId() + " slot " + m.slot() + " " + m.data());
              }

              @Override
              public void left(GroupMember m, LeaseEvent.Type why) {
                events.add("observer: left " + m.memberId() + " " + why);
              }
            })
        .start();
  }

  private <T> T settle(CompletableFuture<T> f) {
    for (int i = 0; i < 10_000 && !f.isDone(); i++) {
      cluster.run(Cluster.STEP);
    }
    return f.join();
  }

  private Member told(Member m) {
    m.onLeft(lost -> events.add(m.memberId() + ": told it left " + lost.kind()));
    return m;
  }

  @Test
  void threeMembersJoinTheObserverSeesThemWithTheirDataAndOneLeaves() {
    GroupView view = observe(64);
    Member a = settle(join(process(), "a", 64));
    Member b = settle(join(process(), "b", 64));
    Member c = settle(join(process(), "c", 64));
    cluster.run(Duration.ofSeconds(1));

    assertThat(view.members())
        .extracting(m -> m.memberId() + " " + m.data())
        .containsExactlyInAnyOrder("a {address=a:8080}", "b {address=b:8080}", "c {address=c:8080}");
    assertThat(view.members()).extracting(GroupMember::slot).doesNotHaveDuplicates();
    assertThat(a.checkAlive()).isTrue();
    GroupMember seenA = view.members().stream().filter(m -> m.memberId().equals("a")).findFirst().orElseThrow();
    assertThat(seenA.slot()).isEqualTo(a.slot());
    assertThat(seenA.token()).isEqualTo(a.token());
    assertThat(settle(Membership.list(processes.get(0), "workers", 64))).isEqualTo(view.members());

    settle(b.leave());
    cluster.run(Duration.ofSeconds(1));

    assertThat(b.checkAlive()).isFalse();
    assertThat(view.members()).extracting(GroupMember::memberId).containsExactlyInAnyOrder("a", "c");
    assertThat(events).contains("observer: left b RELEASED").doesNotContain("b: told it left");
    assertThat(events.stream().filter(e -> e.startsWith("observer: joined"))).hasSize(3);
    c.close();
  }

  @Test
  void aMemberCutOffIsToldItLeftBeforeTheObserverSeesItGoneAndBeforeAnotherTakesItsSlot() {
    GroupView view = observe(3);
    MemoryBackend aProcess = process();
    Member a = told(settle(join(aProcess, "a", 3)));
    settle(join(process(), "b", 3));
    settle(join(process(), "c", 3));
    cluster.run(Duration.ofSeconds(1));
    assertThat(view.members()).hasSize(3);

    aProcess.cutOff();
    MemoryBackend dProcess = process();
    Member d = joinWhenASlotFrees(dProcess, a);

    assertThat(d.slot()).as("d took the slot a held").isEqualTo(a.slot());
    cluster.run(Duration.ofSeconds(1));
    int told = events.indexOf("a: told it left EXPIRED");
    assertThat(told).as(events.toString()).isNotNegative();
    assertThat(told).as(events.toString()).isLessThan(events.indexOf("observer: left a EXPIRED"));
    assertThat(told).as(events.toString()).isLessThan(events.indexOf("d joined"));
    assertThat(view.members()).extracting(GroupMember::memberId).containsExactlyInAnyOrder("b", "c", "d");
  }

  @Test
  void aPausedMemberIsNoMemberPastItsDeadlineAndIsToldItLeftOnResume() {
    GroupView view = observe(3);
    MemoryBackend aProcess = process();
    Member a = told(settle(join(aProcess, "a", 3)));
    settle(join(process(), "b", 3));
    settle(join(process(), "c", 3));
    cluster.run(Duration.ofSeconds(1));
    Duration left = a.lease().remaining();

    aProcess.pause();
    cluster.clock.advance(left.minusMillis(1));
    assertThat(a.checkAlive()).isTrue();
    cluster.clock.advance(Duration.ofMillis(1));
    assertThat(a.checkAlive()).as("at the deadline, with no timer run").isFalse();
    Member d = joinWhenASlotFrees(process(), a);
    assertThat(d.slot()).isEqualTo(a.slot());
    assertThat(events).as("paused: no handler ran yet").doesNotContain("a: told it left EXPIRED");
    assertThat(events).contains("observer: left a EXPIRED");

    aProcess.resume();
    cluster.run(Duration.ofSeconds(1));
    assertThat(events).contains("a: told it left EXPIRED");
    assertThat(a.checkAlive()).isFalse();
    assertThat(view.members()).extracting(GroupMember::memberId).containsExactlyInAnyOrder("b", "c", "d");
  }

  /**
   * Tries to join as "d" every virtual half second until a slot frees; records, as it joins,
   * whether {@code other} still thought it was a member.
   */
  private Member joinWhenASlotFrees(MemoryBackend process, Member other) {
    for (int i = 0; i < 100; i++) {
      CompletableFuture<Member> attempt = join(process, "d", 3);
      CompletableFuture<Member> noted =
          attempt.whenComplete(
              (m, e) -> {
                if (m != null) {
                  events.add("d joined");
                  assertThat(other.checkAlive()).as("the old member is no member once d joined").isFalse();
                }
              });
      try {
        return settle(noted);
      } catch (CompletionException e) {
        assertThat(e.getCause()).isInstanceOf(IllegalStateException.class).hasMessageContaining("is full");
      }
      cluster.run(Duration.ofMillis(500));
    }
    throw new AssertionError("no slot freed within 50 s of virtual time: " + events);
  }

  @Test
  void aFullGroupRefusesWithAClearErrorAndNothingIsLeftHeld() {
    MemoryBackend reader = process();
    settle(join(process(), "a", 2));
    settle(join(process(), "b", 2));

    CompletableFuture<Member> c = join(process(), "c", 2);
    for (int i = 0; i < 100 && !c.isDone(); i++) {
      cluster.run(Cluster.STEP);
    }
    assertThat(c)
        .failsWithin(Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isInstanceOf(IllegalStateException.class)
        .withMessage("group 'workers' is full: all 2 slots (maxMembers) are held by other members; nothing is held");
    for (int slot = 0; slot < 2; slot++) {
      LeaseState state = settle(reader.read(Membership.slotName("workers", slot)));
      assertThat(state.holding().orElseThrow().owner()).isIn("a", "b");
    }
    assertThat(settle(Membership.list(reader, "workers", 2))).extracting(GroupMember::memberId)
        .containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void badInputFailsAtOnceNamingTheField() {
    MemoryBackend backend = process();
    assertThatThrownBy(() -> Membership.join(backend, " ", "a").join())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("group must not be blank");
    assertThatThrownBy(() -> Membership.join(backend, "g", "a").maxMembers(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxMembers must be between 1 and 1024; was 0");
    assertThatThrownBy(() -> GroupView.builder(backend, "g").maxMembers(2000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxMembers must be between 1 and 1024; was 2000");
    assertThatThrownBy(() -> Membership.join(backend, "g", "a").data(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("data must not be null; pass Map.of() for none");
    assertThatThrownBy(() -> Membership.join(backend, "g", "a").data(Map.of("bad key", "v")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("data key may contain only A-Z a-z 0-9 . _ -; found ' '");
    assertThatThrownBy(() -> Membership.join(backend, "g", "a").data(Map.of(Membership.JOINED_KEY, "v")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is reserved");
    assertThatThrownBy(() -> Membership.join(backend, "g", " ").join())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("memberId must not be blank");
    assertThatThrownBy(() -> Membership.join(backend, "g".repeat(250), "a").join())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("group '" + "g".repeat(250) + "' does not make valid slot lease names");
    assertThatThrownBy(() -> Membership.list(backend, "g", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxMembers must be between 1 and 1024; was 0");
  }

  @Test
  void anOnLeftHandlerRegisteredAfterTheMemberLeftIsCalledAtOnce() {
    MemoryBackend aProcess = process();
    Member a = settle(join(aProcess, "a", 4));
    aProcess.cutOff();
    cluster.run(TTL);
    assertThat(a.checkAlive()).isFalse();
    List<LeaseLost> late = new CopyOnWriteArrayList<>();
    a.onLeft(late::add);
    cluster.run(Cluster.STEP);
    assertThat(late).hasSize(1);
  }

  /**
   * A caller that gives up on a join (cancels it, or its timeout fires) holds no Member to close:
   * the slot must be given back, not renewed forever as a ghost member (found in review).
   */
  @Test
  void aJoinItsCallerGaveUpOnGivesItsSlotBack() {
    CompletableFuture<Member> abandoned = join(process(), "a", 2);
    abandoned.cancel(false);
    cluster.run(Duration.ofSeconds(3));

    assertThat(settle(Membership.list(process(), "workers", 2))).as("members after the join was abandoned").isEmpty();
  }

  /**
   * A backend that observes and reads but cannot attach keys, as Kubernetes: a join with data
   * fails at once with its UnsupportedOperationException and holds nothing; one without data
   * joins, and the observer reports it once its dataWait has passed.
   */
  @Test
  void aBackendThatCannotAttachKeysJoinsOnlyWithoutData() {
    MemoryBackend process = process();
    io.leasehold.LeaseBackend noAttach = new NoAttachBackend(process);
    List<String> seen = new CopyOnWriteArrayList<>();
    GroupView view = GroupView.builder(process(), "workers").maxMembers(2).scheduler(cluster.scheduler())
        .dataWait(Duration.ofSeconds(1))
        .listener(new GroupListener() {
          @Override
          public void joined(GroupMember m) {
            seen.add(m.memberId() + " " + m.data());
          }
        })
        .start();

    assertThat(Membership.join(noAttach, "workers", "a").data(Map.of("k", "v")).maxMembers(2).join())
        .as("failed at once, before anything was acquired")
        .isCompletedExceptionally()
        .failsWithin(Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isInstanceOf(UnsupportedOperationException.class)
        .extracting(Throwable::getMessage).asString().startsWith("cannot join group 'workers' with data: attached keys are not supported");
    assertThat(settle(Membership.list(process, "workers", 2))).isEmpty();

    Member a = settle(Membership.join(noAttach, "workers", "a").maxMembers(2).scheduler(cluster.scheduler()).join());
    cluster.run(Duration.ofSeconds(3));
    assertThat(a.checkAlive()).isTrue();
    assertThat(seen).containsExactly("a {}");
    assertThat(view.members()).hasSize(1);
  }

  /**
   * A list of a 1024-slot group read every slot at once, and the core refuses calls past
   * --max-in-flight-per-connection (1000 by default): on a busy connection the list failed, and
   * {@code leasehold members} said a group with a member in slot 40 had none. It now keeps a few
   * reads in flight at a time, and still reads every slot.
   */
  @Test
  void aListOfAWideGroupKeepsOnlyAFewReadsInFlight() throws Exception {
    java.util.concurrent.BlockingQueue<Map.Entry<String, CompletableFuture<LeaseState>>> pending =
        new java.util.concurrent.LinkedBlockingQueue<>();
    io.leasehold.LeaseBackend slow = new NoAttachBackend(process()) {
      @Override
      public CompletableFuture<LeaseState> read(String name) {
        CompletableFuture<LeaseState> answer = new CompletableFuture<>();
        pending.add(Map.entry(name, answer));
        return answer;
      }
    };
    CompletableFuture<List<GroupMember>> list = Membership.list(slow, "wide", Membership.MAX_MAX_MEMBERS);
    int mostAtOnce = 0;
    int answered = 0;
    while (answered < Membership.MAX_MAX_MEMBERS) {
      mostAtOnce = Math.max(mostAtOnce, pending.size());
      Map.Entry<String, CompletableFuture<LeaseState>> read = pending.poll(30, TimeUnit.SECONDS);
      assertThat(read).as("read " + answered + " asked for").isNotNull();
      boolean held = read.getKey().equals(Membership.slotName("wide", 40));
      read.getValue().complete(new LeaseState(read.getKey(),
          held ? java.util.Optional.of(new io.leasehold.LeaseHolding("node-9#1", 7, java.util.Optional.empty()))
              : java.util.Optional.empty(),
          Map.of()));
      answered++;
    }
    assertThat(mostAtOnce).as("reads in flight at once").isPositive().isLessThanOrEqualTo(Membership.READS_AT_ONCE);
    assertThat(list.get(30, TimeUnit.SECONDS)).extracting(GroupMember::slot).containsExactly(40);
  }

  /** Delegates to a memory backend, but its leases cannot attach keys (the interface's default). */
  private static class NoAttachBackend implements io.leasehold.LeaseBackend {
    private final MemoryBackend inner;

    NoAttachBackend(MemoryBackend inner) {
      this.inner = inner;
    }

    @Override
    public io.leasehold.Lease newLease(io.leasehold.LeaseSettings settings) {
      io.leasehold.Lease l = inner.newLease(settings);
      return new io.leasehold.Lease() {
        @Override public String name() { return l.name(); }
        @Override public String owner() { return l.owner(); }
        @Override public io.leasehold.HolderId holder() { return l.holder(); }
        @Override public io.leasehold.LeaseSettings settings() { return l.settings(); }
        @Override public CompletableFuture<Boolean> acquire() { return l.acquire(); }
        @Override public CompletableFuture<Void> release() { return l.release(); }
        @Override public boolean checkAlive() { return l.checkAlive(); }
        @Override public Duration remaining() { return l.remaining(); }
        @Override public java.util.OptionalLong fencingToken() { return l.fencingToken(); }
        @Override public io.leasehold.Subscription onLost(java.util.function.Consumer<LeaseLost> h) { return l.onLost(h); }
        @Override public void close() { l.close(); }
      };
    }

    @Override
    public io.leasehold.Subscription observe(String name, io.leasehold.LeaseObserver observer) {
      return inner.observe(name, observer);
    }

    @Override
    public CompletableFuture<LeaseState> read(String name) {
      return inner.read(name);
    }

    @Override
    public String uri() {
      return "no-attach:";
    }

    @Override
    public void close() {}
  }
}
