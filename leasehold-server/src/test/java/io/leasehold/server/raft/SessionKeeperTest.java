package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SessionKeeperTest {

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final SessionKeeper keeper = new SessionKeeper(now::get);

  private void pass(long millis) {
    now.addAndGet(millis * 1_000_000L);
  }

  @Test
  void aSessionExpiresOneTtlAfterItsLastKeepAlive() {
    keeper.granted(1, 1_000);
    pass(900);
    assertThat(keeper.keepAlive(1)).isTrue();
    pass(900);
    assertThat(keeper.expired()).isEmpty();
    pass(100);
    assertThat(keeper.expired()).containsExactly(1L);
  }

  @Test
  void aNewLeaderReArmsEverySessionForAFullTtlFromNow() {
    keeper.granted(1, 1_000);
    keeper.granted(2, 10_000);
    pass(800);
    keeper.markQuiet(keeper.maxSessionId());
    keeper.rearm(1, keeper.maxSessionId(), now.get(), 0, Map.of());
    pass(900);
    assertThat(keeper.expired()).as("session 1 got a full TTL from the re-arm").isEmpty();
    pass(100);
    assertThat(keeper.expired()).containsExactly(1L);
    pass(8_200);
    assertThat(keeper.expired()).as("session 2 lives 10 s from the re-arm, not from its grant").containsExactly(1L);
    pass(800);
    assertThat(keeper.expired()).containsExactlyInAnyOrder(1L, 2L);
  }

  @Test
  void aSessionPastItsDeadlineIsNotRevivedByALateKeepAlive() {
    keeper.granted(1, 1_000);
    pass(1_000);
    assertThat(keeper.keepAlive(1)).isFalse();
    assertThat(keeper.expired()).containsExactly(1L);
  }

  @Test
  void aKeepAliveDelayedPastTheExpiryCheckDoesNotReviveTheSession() {
    // The keep-alive reads the clock just before the deadline and is then descheduled; the expiry
    // check runs at the deadline and decides to expire the session; then the keep-alive resumes.
    AtomicReference<Runnable> whileReading = new AtomicReference<>();
    SessionKeeper racing =
        new SessionKeeper(
            () -> {
              long read = now.get();
              Runnable descheduled = whileReading.getAndSet(null);
              if (descheduled != null) {
                descheduled.run();
              }
              return read;
            });
    racing.granted(1, 1_000);
    pass(999);
    List<Long> expired = new ArrayList<>();
    whileReading.set(() -> {
      pass(1);
      expired.addAll(racing.expired());
    });

    boolean alive = racing.keepAlive(1);

    assertThat(expired).as("the expiry check saw the deadline pass").containsExactly(1L);
    assertThat(alive).as("a keep-alive answered after the session was judged expired").isFalse();
    assertThat(racing.expired()).as("the session stays expired").containsExactly(1L);
  }

  @Test
  void aSessionQuietSinceBeforeTheReArmExpiresOneTtlAfterItBecameQuiet() {
    keeper.granted(1, 1_000);
    keeper.granted(2, 1_000);
    keeper.markQuiet(2);
    // Cluster time is 5,000 ms now; the state records session 1 as quiet since 4,400 ms.
    keeper.rearm(3, 2, now.get(), 5_000, Map.of(1L, 4_400L));
    pass(399);
    assertThat(keeper.expired()).isEmpty();
    pass(1);
    assertThat(keeper.expired()).as("600 ms of its TTL had passed under an earlier leader").containsExactly(1L);
    pass(600);
    assertThat(keeper.expired()).containsExactlyInAnyOrder(1L, 2L);
  }

  @Test
  void aQuietSessionIsConfirmedOnlyAfterItsHeardEntryAndThenForAFullTtl() {
    keeper.granted(1, 1_000);
    keeper.markQuiet(1);
    keeper.rearm(1, 1, now.get(), 0, Map.of());
    pass(500);
    long epoch = keeper.keepAlive(1, 1, false);
    assertThat(epoch).as("a quiet session needs a Heard entry first").isGreaterThanOrEqualTo(0);
    pass(100);
    assertThat(keeper.confirmHeard(1, 1, epoch)).isEqualTo(SessionKeeper.ALIVE);
    assertThat(keeper.keepAlive(1, 1, false)).as("no longer quiet").isEqualTo(SessionKeeper.ALIVE);
    pass(999);
    assertThat(keeper.expired()).isEmpty();
    pass(1);
    assertThat(keeper.expired()).containsExactly(1L);
  }

  @Test
  void aHeardWrittenBeforeTheSessionWasMarkedQuietAgainDoesNotConfirmIt() {
    keeper.granted(1, 1_000);
    keeper.markQuiet(1);
    long epoch = keeper.keepAlive(1, 1, false);
    keeper.markQuiet(1); // this node takes over again (a new term) before the Heard is applied
    long again = keeper.confirmHeard(1, 1, epoch);
    assertThat(again).as("another Heard is needed").isGreaterThan(epoch);
    assertThat(keeper.confirmHeard(1, 1, again)).isEqualTo(SessionKeeper.ALIVE);
  }

  @Test
  void beforeItReArmsANewLeaderNeitherJudgesKeepAlivesByStaleDeadlinesNorSkipsAQuietMark() {
    keeper.granted(1, 1_000);
    keeper.granted(2, 1_000);
    keeper.markQuiet(2);
    keeper.rearm(4, 2, now.get(), 0, Map.of());
    pass(5_000); // deadlines of term 4, long passed; this node now leads term 6
    assertThat(keeper.keepAlive(1, 6, false)).as("quiet in this node's own marking").isGreaterThanOrEqualTo(0);
    keeper.confirmHeard(1, 6, keeper.keepAlive(1, 6, false));
    assertThat(keeper.keepAlive(1, 6, false)).as("not judged by term 4's deadline").isEqualTo(SessionKeeper.ALIVE);
    assertThat(keeper.keepAlive(2, 6, true)).as("quiet in the replicated state").isGreaterThanOrEqualTo(0);
  }

  /**
   * One replicated state and a leader that changes often. Every node applies the same entries
   * (the shared {@link CoreState}); the leader of the moment has a keeper and a clock of its own,
   * which know only what its replica applied, and expires sessions with a real {@link
   * SessionExpiry}. Entries commit at once; time is virtual.
   */
  private final class Elections {
    final CoreState state = new CoreState();
    long index;
    long term;
    SessionKeeper leaderKeeper;
    ClusterClock leaderClock;
    SessionExpiry expiry;
    /** When each session's holder last sent a keep-alive the leader confirmed (nanos). */
    final Map<Long, Long> confirmedSentAt = new java.util.HashMap<>();
    final List<String> cutShort = new ArrayList<>();
    final Map<Long, Long> ttlMillis = new java.util.HashMap<>();

    void newLeader() {
      term++;
      leaderKeeper = new SessionKeeper(now::get);
      state.sessionTtls().forEach(leaderKeeper::granted); // what its replica applied
      leaderClock = new ClusterClock(now::get);
      leaderClock.reset(state.clockMillis());
      long myTerm = term;
      SessionExpiry.Leadership leads =
          new SessionExpiry.Leadership() {
            @Override
            public boolean isReadyLeader() {
              return term == myTerm;
            }

            @Override
            public long currentTerm() {
              return term;
            }
          };
      expiry = new SessionExpiry("n" + term, leaderKeeper, state, leaderClock, leads, this::commit);
      expiry.tick(); // takes over: re-arms, marks sessions quiet
    }

    java.util.concurrent.CompletableFuture<io.leasehold.server.state.Reply> commit(io.leasehold.server.state.Command command) {
      leaderClock.lead(term);
      io.leasehold.server.state.Command stamped = command.toBuilder().setStampMillis(leaderClock.leaderNow(term)).build();
      CoreState.Applied applied = state.apply(++index, term, stamped);
      leaderClock.applied(stamped.getStampMillis());
      if (applied.change() instanceof CoreState.Change.Granted g) {
        leaderKeeper.granted(g.sessionId(), g.ttlMillis());
        confirmedSentAt.put(g.sessionId(), now.get());
        ttlMillis.put(g.sessionId(), g.ttlMillis());
      } else if (applied.change() instanceof CoreState.Change.Ended e) {
        leaderKeeper.ended(e.sessionId());
        long holderStops = confirmedSentAt.get(e.sessionId()) + ttlMillis.get(e.sessionId()) * 1_000_000L;
        if (now.get() - holderStops < 0) {
          cutShort.add("session " + e.sessionId() + " expired " + (holderStops - now.get()) / 1_000_000 + " ms before its holder stops");
        }
      }
      return java.util.concurrent.CompletableFuture.completedFuture(applied.reply());
    }

    long grant(long ttl) {
      io.leasehold.server.state.Command grant =
          io.leasehold.server.state.Command.newBuilder()
              .setGrant(io.leasehold.core.proto.GrantRequest.newBuilder().setOwner("o").setTtlMillis(ttl))
              .build();
      commit(grant);
      return index;
    }

    /** A keep-alive of the holder, sent now, as the leader's state machine handles it. */
    void keepAlive(long id) {
      long sentAt = now.get();
      CoreState.SessionStatus status = state.sessionStatus(id);
      if (status == CoreState.SessionStatus.GONE) {
        return;
      }
      long result = leaderKeeper.keepAlive(id, term, status == CoreState.SessionStatus.QUIET);
      if (result >= 0) {
        commit(io.leasehold.server.state.Command.newBuilder().setHeard(io.leasehold.server.state.Heard.newBuilder().addSessionIds(id)).build());
        result = leaderKeeper.confirmHeard(id, term, result);
      }
      if (result == SessionKeeper.ALIVE) {
        confirmedSentAt.put(id, sentAt);
      }
    }
  }

  @Test
  void aDeadHoldersSessionEndsWithinTwoTtlsOfLeaderTimeHoweverOftenTheLeaderChanges() {
    Elections cluster = new Elections();
    cluster.newLeader();
    long live = cluster.grant(1_000);
    long dead = cluster.grant(1_000);
    long partitioned = cluster.grant(1_000);
    long grantedAt = now.get();
    Long deadEndedAt = null;
    // A new leader every 400 ms, well under the TTL; the expiry ticks every 20 ms; the live
    // holder sends a keep-alive every 250 ms; the partitioned one reaches only every third leader.
    for (int step = 1; step <= 500; step++) {
      pass(20);
      if (step % 20 == 0) {
        cluster.newLeader();
      }
      if (step % 12 == 0) {
        cluster.keepAlive(live);
        if (cluster.term % 3 == 0) {
          cluster.keepAlive(partitioned);
        }
      }
      cluster.expiry.tick();
      if (deadEndedAt == null && !cluster.state.hasSession(dead)) {
        deadEndedAt = now.get();
      }
    }
    assertThat(cluster.cutShort).as("sessions expired while their holder still held them").isEmpty();
    assertThat(cluster.state.hasSession(live)).as("the live holder's session").isTrue();
    assertThat(deadEndedAt).as("the dead holder's session ended within 10 s (10 TTLs, 25 leader changes)").isNotNull();
    assertThat((deadEndedAt - grantedAt) / 1_000_000)
        .as("ms from its last keep-alive (the grant) to its end")
        .isLessThanOrEqualTo(2_000 + 2 * 20 + 250);
  }

  @Test
  void unknownSessionsAreNotKeptAlive() {
    assertThat(keeper.keepAlive(7)).isFalse();
    keeper.reset(Map.of(7L, 1_000L));
    assertThat(keeper.keepAlive(7)).isTrue();
    keeper.ended(7);
    assertThat(keeper.keepAlive(7)).isFalse();
  }
}
