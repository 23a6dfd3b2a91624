package io.leasehold.server;

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

  private void pass(long millis) {
    now.addAndGet(millis * 1_000_000L);
  }

  private SessionExpiry expiry(java.util.function.Consumer<Command> onSubmit) {
    return new SessionExpiry(
        "n1",
        keeper,
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
    pass(TTL_MILLIS);
    // While this round submits, the node applies a newer leader's entries: its term moves on and
    // it no longer leads (a deposed leader that resumed after a pause).
    SessionExpiry expiry =
        expiry(command -> {
          division.term = 8;
          division.leader = false;
        });

    expiry.tick();

    assertThat(submitted).as("the stale deadlines of the resumed node still look expired").isNotEmpty();
    assertThat(submitted)
        .extracting(c -> c.getExpire().getTerm())
        .as("an expiry decided while leading term 7 must carry term 7, whatever the term is by the time it is sent")
        .containsOnly(7L);
  }
}
