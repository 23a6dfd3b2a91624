package io.leasehold.recipes.membership;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * How a {@link GroupView} turns one slot's events into joins and leaves, driven by hand: the
 * store's answers to reads are set by the test, the scheduler's tasks run when the test says.
 */
class GroupViewTest {

  private final Map<String, LeaseObserver> observers = new HashMap<>();
  private final Deque<LeaseState> answers = new ArrayDeque<>();
  private final List<Runnable> tasks = new ArrayList<>();
  private final List<Long> delays = new ArrayList<>();
  private final List<String> told = new ArrayList<>();

  private final LeaseBackend backend =
      new LeaseBackend() {
        @Override
        public Lease newLease(LeaseSettings settings) {
          throw new UnsupportedOperationException();
        }

        @Override
        public Subscription observe(String name, LeaseObserver observer) {
          observers.put(name, observer);
          return () -> observers.remove(name);
        }

        @Override
        public CompletableFuture<LeaseState> read(String name) {
          return CompletableFuture.completedFuture(answers.size() > 1 ? answers.poll() : answers.peek());
        }

        @Override
        public String uri() {
          return "fake:";
        }

        @Override
        public void close() {}
      };

  private final GroupView view =
      GroupView.builder(backend, "g")
          .maxMembers(1)
          .scheduler(
              (task, delayNanos) -> {
                tasks.add(task);
                delays.add(delayNanos);
                return () -> tasks.remove(task);
              })
          .listener(
              new GroupListener() {
                @Override
                public void joined(GroupMember m) {
                  told.add("joined " + m.memberId() + " " + m.token() + " " + m.data());
                }

                @Override
                public void left(GroupMember m, LeaseEvent.Type why) {
                  told.add("left " + m.memberId() + " " + m.token() + " " + why);
                }
              })
          .start();

  private static LeaseHolding holding(String owner, long token) {
    return new LeaseHolding(owner + "#1", token, Optional.empty());
  }

  private static LeaseState state(LeaseHolding h, Map<String, String> attached) {
    return new LeaseState("g.member.0", Optional.ofNullable(h), attached);
  }

  private static LeaseState complete(LeaseHolding h) {
    return state(h, Map.of("address", h.owner(), Membership.JOINED_KEY, h.owner()));
  }

  private void event(LeaseEvent.Type type, LeaseHolding h) {
    observers.get("g.member.0").onEvent(new LeaseEvent(type, "g.member.0", Optional.ofNullable(h), ""));
    runTasks();
  }

  private void runTasks() {
    while (!tasks.isEmpty()) {
      tasks.remove(0).run();
    }
  }

  @Test
  void aGapReconcilesWithTheStateReadAgain() {
    LeaseHolding a = holding("a", 1);
    LeaseHolding b = holding("b", 5);
    answers.add(complete(a));
    event(LeaseEvent.Type.CURRENT, a);
    assertThat(told).containsExactly("joined a 1 {address=a}");

    answers.clear();
    answers.add(complete(b));
    event(LeaseEvent.Type.GAP, b);
    event(LeaseEvent.Type.GAP, b); // the same again: nothing new
    assertThat(told).containsExactly("joined a 1 {address=a}", "left a 1 GAP", "joined b 5 {address=b}");

    event(LeaseEvent.Type.GAP, null);
    assertThat(told).endsWith("left b 5 GAP");
    assertThat(view.members()).isEmpty();
  }

  @Test
  void aJoinerSeenBeforeItsDataIsReportedOnceTheDataIsThereAndOneThatLeavesFirstNever() {
    LeaseHolding a = holding("a", 1);
    answers.add(state(a, Map.of()));
    answers.add(state(a, Map.of("address", "a")));
    answers.add(complete(a));
    event(LeaseEvent.Type.ACQUIRED, a);
    assertThat(told).containsExactly("joined a 1 {address=a}");
    assertThat(delays).as("read again after 50 ms, then 100 ms (and listener calls at once)")
        .contains(50_000_000L, 100_000_000L);

    event(LeaseEvent.Type.EXPIRED, a);
    LeaseHolding b = holding("b", 2);
    answers.clear();
    answers.add(state(b, Map.of()));
    observers.get("g.member.0").onEvent(new LeaseEvent(LeaseEvent.Type.ACQUIRED, "g.member.0", Optional.of(b), ""));
    observers.get("g.member.0").onEvent(new LeaseEvent(LeaseEvent.Type.RELEASED, "g.member.0", Optional.of(b), ""));
    runTasks();
    assertThat(told).as("b left before its data was complete: never reported")
        .containsExactly("joined a 1 {address=a}", "left a 1 EXPIRED");
    assertThat(view.members()).isEmpty();
    view.close();
    assertThat(observers).isEmpty();
  }

  /**
   * A read served by a lagging replica can show the slot as it was before the event (free, or an
   * older tenure). No event follows for that: the joiner must be read again, not left pending
   * until the slot's next change.
   */
  @Test
  void aReadOlderThanTheEventIsReadAgainNotLeftPending() {
    LeaseHolding old = holding("a", 3);
    LeaseHolding b = holding("b", 7);
    answers.add(state(null, Map.of())); // the slot as it was before b: free
    answers.add(complete(old)); // older still
    answers.add(complete(b));
    event(LeaseEvent.Type.ACQUIRED, b);
    assertThat(told).containsExactly("joined b 7 {address=b}");
    assertThat(view.members()).extracting(GroupMember::token).containsExactly(7L);
  }

  /** A newer tenure in the read means the store moved on: its event follows, nothing is reported. */
  @Test
  void aReadNewerThanTheEventWaitsForTheEventThatFollows() {
    LeaseHolding b = holding("b", 7);
    LeaseHolding c = holding("c", 9);
    answers.add(complete(c));
    event(LeaseEvent.Type.ACQUIRED, b);
    assertThat(told).isEmpty();
    event(LeaseEvent.Type.TAKEN_OVER, c);
    assertThat(told).containsExactly("joined c 9 {address=c}");
  }

  /** An ACQUIRED repeated for a tenure already reported (e.g. after a reconnect) changes nothing. */
  @Test
  void aRepeatedAcquiredOfAReportedTenureChangesNothing() {
    LeaseHolding a = holding("a", 1);
    answers.add(complete(a));
    event(LeaseEvent.Type.ACQUIRED, a);
    event(LeaseEvent.Type.ACQUIRED, a);
    assertThat(told).containsExactly("joined a 1 {address=a}");
  }
}
