package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The leader's expiry decision, with an injected leadership, term and clock. */
class SessionExpiryTest {

  private static final long TTL_MILLIS = 1_000;

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final SessionKeeper keeper = new SessionKeeper(now::get);
  private final CoreState state = new CoreState();
  private final ClusterClock clock = new ClusterClock(now::get);
  private final Division division = new Division();
  private final List<Command> submitted = new ArrayList<>();

  /** A Raft division whose leadership and term the test moves. */
  private static final class Division implements SessionExpiry.Leadership {
    volatile boolean leader = true;
    volatile long term = 7;

    @Override
    public boolean isReadyLeader() {
      return leader;
    }

    @Override
    public long currentTerm() {
      return term;
    }
  }

  private List<Command> expires() {
    return submitted.stream().filter(Command::hasExpire).toList();
  }

  private void pass(long millis) {
    now.addAndGet(millis * 1_000_000L);
  }

  private SessionExpiry expiry(java.util.function.Consumer<Command> onSubmit) {
    return new SessionExpiry(
        "n1",
        keeper,
        state,
        clock,
        division,
        command -> {
          submitted.add(command);
          onSubmit.accept(command);
          return new CompletableFuture<Reply>(); // still on its way through the log
        });
  }

  @Test
  void everyExpiryOfOneRoundIsStampedWithTheTermInWhichThisNodeLed() {
    for (long id = 1; id <= 3; id++) {
      keeper.granted(id, TTL_MILLIS);
    }
    // While a round submits, the node applies a newer leader's entries: its term moves on and it
    // no longer leads (a deposed leader that resumed after a pause).
    SessionExpiry expiry =
        expiry(command -> {
          if (command.hasExpire()) {
            division.term = 8;
            division.leader = false;
          }
        });
    expiry.tick(); // the first round of term 7 arms the deadlines
    pass(TTL_MILLIS);

    expiry.tick();

    assertThat(expires()).as("the stale deadlines of the resumed node still look expired").isNotEmpty();
    assertThat(expires())
        .extracting(c -> c.getExpire().getTerm())
        .as("an expiry decided while leading term 7 must carry term 7, whatever the term is by the time it is sent")
        .containsOnly(7L);
  }

  @Test
  void aNodeThatBecomesLeaderDecidesNothingFromTheDeadlinesItHadAsAFollower() {
    keeper.granted(1, TTL_MILLIS); // applied as a follower: its deadline means nothing
    pass(10 * TTL_MILLIS);
    SessionExpiry expiry = expiry(command -> {});

    expiry.tick();

    assertThat(expires()).as("the first round of a term re-arms instead").isEmpty();
    assertThat(submitted).extracting(Command::getKindCase).containsExactly(Command.KindCase.QUIET);
    assertThat(submitted.get(0).getQuiet().getTerm()).isEqualTo(7);
    pass(TTL_MILLIS - 1);
    expiry.tick();
    assertThat(expires()).as("a full TTL from the re-arm").isEmpty();
    pass(1);
    expiry.tick();
    assertThat(expires()).extracting(c -> c.getExpire().getSessionId()).containsExactly(1L);
  }

  @Test
  void noDecisionIsMadeWhenTheTermMovesDuringTheLeadershipCheck() {
    keeper.granted(1, TTL_MILLIS);
    SessionExpiry expiry = expiry(command -> {});
    expiry.tick();
    pass(TTL_MILLIS);
    SessionExpiry.Leadership moving =
        new SessionExpiry.Leadership() {
          private long term = 7;

          @Override
          public boolean isReadyLeader() {
            term = 8; // a newer leader's entry is applied while the role is read
            return true;
          }

          @Override
          public long currentTerm() {
            return term;
          }
        };
    new SessionExpiry("n1", keeper, state, clock, moving, c -> {
      submitted.add(c);
      return new CompletableFuture<>();
    }).tick();

    assertThat(expires()).isEmpty();
  }

  @Test
  void anExpiryNotAppendedByTheLocalServerIsDroppedAndDecidedAgainOnlyWhileLeading() {
    keeper.granted(1, TTL_MILLIS);
    List<Command> local = new ArrayList<>();
    SessionExpiry expiry =
        new SessionExpiry("n1", keeper, state, clock, division, c -> {
          local.add(c);
          return c.hasExpire()
              ? CompletableFuture.failedFuture(new java.io.IOException("not the leader"))
              : CompletableFuture.completedFuture(Reply.getDefaultInstance());
        });
    expiry.tick();
    pass(TTL_MILLIS);
    expiry.tick();
    assertThat(expiry.dropped()).isEqualTo(1);
    assertThat(expiry.inFlight()).isZero();
    division.leader = false;
    expiry.tick();
    assertThat(local.stream().filter(Command::hasExpire)).as("no more decisions once not leading").hasSize(1);
  }
}
