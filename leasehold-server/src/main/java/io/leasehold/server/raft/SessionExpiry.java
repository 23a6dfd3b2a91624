package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import io.leasehold.server.state.ClockTick;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import io.leasehold.server.state.Quiet;
import io.leasehold.server.state.Reply;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader's expiry of sessions whose deadline passed, through the log so that every replica
 * ends them. Runs on one thread, every tick; what it asks of the node (does it lead, in which
 * term, how to submit a command to the local Raft server) is injected, so it can be tested
 * without a cluster.
 *
 * <p><b>A leader-only decision is made and stamped in one step with the term in which the node
 * led, and never forwarded.</b> Each round reads the term, checks that the node is the ready
 * leader, and reads the term again; only if it did not move does it decide, from deadlines armed
 * for that same term, and every {@code Expire} of the round carries that term. The commands go to
 * the local Raft server only: if the node no longer leads, they fail there and are dropped. The
 * state machine applies an {@code Expire} only if the entry was appended in the term it carries,
 * so a decision can only take effect through the log of the leader that made it. Such a leader,
 * resumed after a pause that outlasted its lease, still believes for a moment that it leads and
 * decides from stale deadlines; but whatever it appends then cannot commit: any newer leader
 * that confirmed a keep-alive had first committed an entry of its own term on a majority, and
 * those nodes refuse the old leader's entries, which are then overwritten.
 *
 * <p>On taking over (the first round of a term), the leader re-arms every session (see {@link
 * SessionKeeper}) and writes a {@code Quiet} entry; while sessions stay quiet it writes a small
 * {@code ClockTick} every {@link #CLOCK_TICK_NANOS}, so that cluster time, by which later leaders
 * count a quiet session's TTL, keeps up with the time this leader leads.
 */
public final class SessionExpiry {

  private static final Logger log = LoggerFactory.getLogger(SessionExpiry.class);

  /** How often the leader stamps an entry while sessions are quiet. */
  static final long CLOCK_TICK_NANOS = 100_000_000L;

  /** What the expiry needs to know about this node's place in the Raft group. */
  public interface Leadership {
    /** {@return whether this node leads and has committed an entry of its term} */
    boolean isReadyLeader();

    /** {@return this node's current term} */
    long currentTerm();
  }

  private final String node;
  private final SessionKeeper keeper;
  private final CoreState state;
  private final ClusterClock clock;
  private final Leadership leadership;
  private final Function<Command, CompletableFuture<Reply>> submitLocally;
  private final Set<Long> expiring = ConcurrentHashMap.newKeySet();
  private final AtomicLong ticks = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicBoolean writing = new AtomicBoolean();
  private volatile LongConsumer afterLeadershipCheck = term -> {};
  /** The Quiet entry of the armed term, until it is applied. */
  private volatile Command quietToWrite;
  private long lastClockTickNanos;
  /**
   * The identity this node proposes for the cluster in its Quiet entries; the state takes the
   * first one applied while it has none (a new cluster, or one restored from a backup).
   */
  private final String clusterIdProposal = java.util.UUID.randomUUID().toString();
  private boolean clockTicked;

  /**
   * @param node this node's id, for the log
   * @param keeper the session deadlines
   * @param state the replicated state (which sessions are quiet)
   * @param clock cluster time
   * @param leadership this node's leadership
   * @param submitLocally appends a command to the log of the local Raft server; fails, and never
   *     forwards, when that server does not lead
   */
  public SessionExpiry(
      String node,
      SessionKeeper keeper,
      CoreState state,
      ClusterClock clock,
      Leadership leadership,
      Function<Command, CompletableFuture<Reply>> submitLocally) {
    this.node = node;
    this.keeper = keeper;
    this.state = state;
    this.clock = clock;
    this.leadership = leadership;
    this.submitLocally = submitLocally;
  }

  /** One round: if this node is the ready leader, arms its deadlines or ends the overdue sessions. */
  public void tick() {
    try {
      round();
    } finally {
      ticks.incrementAndGet();
    }
  }

  private void round() {
    // The term is read before and after the leadership check: if it did not move, the node was
    // the leader of exactly this term when it checked (a term is led by one node, once).
    long term = leadership.currentTerm();
    if (!leadership.isReadyLeader() || leadership.currentTerm() != term) {
      return;
    }
    afterLeadershipCheck.accept(term);
    if (keeper.armedTerm() != term) {
      arm(term);
      return;
    }
    Command quiet = quietToWrite;
    if (quiet != null) {
      write(quiet, () -> quietToWrite = null);
    }
    for (long sessionId : keeper.expired()) {
      if (!expiring.add(sessionId)) {
        continue; // already on its way through the log
      }
      log.info("node {}: session {} expired (term {}); deleting it and its keys", node, sessionId, term);
      Command expire =
          Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(sessionId).setTerm(term)).build();
      submitLocally.apply(expire).whenComplete((reply, error) -> {
        expiring.remove(sessionId);
        if (error != null) {
          dropped.incrementAndGet();
          log.info("node {}: expiry of session {} decided in term {} not appended here ({}); dropped, never forwarded",
              node, sessionId, term, error.toString());
        }
      });
    }
    long now = clock.nanos();
    if (state.hasQuietSessions() && (!clockTicked || now - lastClockTickNanos >= CLOCK_TICK_NANOS)) {
      clockTicked = true;
      lastClockTickNanos = now;
      write(Command.newBuilder().setClockTick(ClockTick.getDefaultInstance()).build(), () -> {});
    }
  }

  /**
   * The first round of a term: marks every session quiet, reads cluster time, re-arms the
   * deadlines (see {@link SessionKeeper#rearm}) and writes the Quiet entry. In this order, a
   * keep-alive confirmed without a Heard entry was confirmed before the time the entry names.
   */
  private void arm(long term) {
    clock.lead(term);
    long maxSessionId = keeper.maxSessionId();
    keeper.markQuiet(maxSessionId);
    long nowNanos = clock.nanos();
    long sinceMillis = clock.leaderAt(term, nowNanos);
    keeper.rearm(term, maxSessionId, nowNanos, sinceMillis, state.quietSince());
    log.info("node {}: leads term {}; re-armed {} sessions, quiet since cluster time {} ms", node, term, keeper.size(), sinceMillis);
    Command quiet =
        Command.newBuilder()
            .setQuiet(
                Quiet.newBuilder()
                    .setTerm(term)
                    .setSinceMillis(sinceMillis)
                    .setMaxSessionId(maxSessionId)
                    .setClusterId(clusterIdProposal))
            .build();
    quietToWrite = quiet;
    write(quiet, () -> quietToWrite = null);
  }

  /** Writes one leader command at a time; {@code done} runs once it is applied. */
  private void write(Command command, Runnable done) {
    if (!writing.compareAndSet(false, true)) {
      return; // the previous one is still on its way; this round's is written by a later round
    }
    submitLocally.apply(command).whenComplete((reply, error) -> {
      writing.set(false);
      if (error == null) {
        done.run();
      } else {
        log.debug("node {}: {} not appended here: {}", node, command.getKindCase(), error.toString());
      }
    });
  }

  /**
   * For tests: runs {@code hook} with the term on the expiry thread right after a round found this
   * node leading.
   */
  void afterLeadershipCheck(LongConsumer hook) {
    afterLeadershipCheck = hook;
  }

  /** {@return how many rounds have finished} */
  long ticks() {
    return ticks.get();
  }

  /** {@return how many expiries are on their way through the log} */
  int inFlight() {
    return expiring.size();
  }

  /** {@return how many expiries were dropped because the local server did not append them} */
  long dropped() {
    return dropped.get();
  }
}
