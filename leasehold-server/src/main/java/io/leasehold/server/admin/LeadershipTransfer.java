package io.leasehold.server.admin;

import io.leasehold.server.CoreNode;
import io.leasehold.server.DaemonThreads;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.raft.NotNowException;
import io.leasehold.server.raft.Polling;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.proto.RaftProtos.ServerRpcProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Planned moves of the Raft leadership: an operator's {@code TransferLeader}, and the hand-over of
 * a leader that is being stopped, so that clients wait for neither an election timeout nor a
 * failover of their own.
 *
 * <p>Why a move keeps every lease: Ratis ends the old leader's leader lease before it asks the
 * new one to stand, so from then on the old leader answers a keep-alive only after a majority
 * confirmed it still leads (which it no longer can once the new one leads); and a new leader
 * re-arms every session for a full TTL from the moment it leads, as after any election. A
 * keep-alive confirmed by the old leader was sent before that moment, so the holder's deadline,
 * measured from its send, ends before the session's can.
 */
public final class LeadershipTransfer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeadershipTransfer.class);

  /** How long a move waits for the new leader unless told otherwise. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

  /** The longest a caller may ask to wait. */
  public static final Duration MAX_TIMEOUT = Duration.ofMinutes(1);

  /** The leader before a move and the node that leads after it. */
  public record Moved(String previousLeader, String leader) {}

  /** Identifies this node's own moves to Ratis's retry cache; call ids never repeat. */
  private static final ClientId CLIENT_ID = ClientId.randomId();

  private final java.util.concurrent.atomic.AtomicLong callIds = new java.util.concurrent.atomic.AtomicLong();
  private final NodeConfig config;
  private final RaftServer server;
  private final RaftGroupId group;
  private final RaftClient client;
  /** Ratis's admin call blocks; moves are rare, so one thread runs them one at a time. */
  private final ExecutorService mover;
  /** The voting members now (they change with membership changes). */
  private final java.util.function.Supplier<java.util.List<Peer>> members;
  /** Refuses this node's reads for a while (the state machine's guard; see {@link #moveNow}). */
  private final java.util.function.Consumer<Duration> refuseReadsFor;
  /** The longest election timeout: the shortest wait a move may have, and the guard's length. */
  private final Duration longestElection;

  public LeadershipTransfer(
      NodeConfig config,
      RaftServer server,
      RaftGroupId group,
      RaftClient client,
      java.util.function.Supplier<java.util.List<Peer>> members,
      java.util.function.Consumer<Duration> refuseReadsFor) {
    this.config = config;
    this.members = members;
    this.refuseReadsFor = refuseReadsFor;
    this.longestElection =
        Duration.ofMillis(CoreNode.longestElectionTimeoutMs(config.electionTimeout().toMillis()));
    this.server = server;
    this.group = group;
    this.client = client;
    this.mover =
        Executors.newSingleThreadExecutor(DaemonThreads.named("leasehold-leadership-" + config.self()));
  }

  /**
   * Moves the leadership.
   *
   * @param to the node that should lead; empty for the follower this node, the leader, heard from
   *     last
   * @param timeout how long to wait for the new leader: from the longest election timeout (a
   *     shorter wait ends before the new leader can be elected, and Ratis then turns the old
   *     leader's lease back on while the new one may win) up to {@link #MAX_TIMEOUT}
   * @return completes once {@code to} leads; with {@link IllegalArgumentException} for an unknown
   *     id, {@link NotNowException} when there is no leader or {@code to} is empty on a follower,
   *     and Ratis's exception when the move failed or timed out
   */
  public CompletableFuture<Moved> move(Optional<String> to, Duration timeout) {
    if (timeout.compareTo(longestElection) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException(
              "timeout must be " + longestElection.toMillis() + " ms (the longest election timeout: a move"
                  + " needs an election) to " + MAX_TIMEOUT.toMillis() + " ms; was " + timeout.toMillis() + " ms"));
    }
    java.util.List<Peer> now = members.get();
    if (to.isPresent() && now.stream().noneMatch(p -> p.id().equals(to.get()))) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException(
              "to must be one of the cluster's nodes ("
                  + String.join(", ", now.stream().map(Peer::id).toList())
                  + "); was '" + to.get() + "'"));
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    return CompletableFuture.supplyAsync(() -> moveNow(to, deadline), mover);
  }

  /** Runs on the mover thread: it may wait for a leader to be known, and for Ratis's answer. */
  private Moved moveNow(Optional<String> to, long deadline) {
    long started = System.nanoTime();
    String previous = awaitKnownLeader(deadline).toString();
    DivisionInfo info = info();
    String target;
    if (to.isPresent()) {
      target = to.get();
    } else if (info.isLeader()) {
      target =
          freshestFollower(info.getRoleInfoProto())
              .orElseThrow(() -> new NotNowException("leader " + previous + " has no follower to hand over to"));
    } else {
      throw new NotNowException(
          "node " + config.self() + " does not lead (" + previous + " does): name the node that should lead, or"
              + " ask the leader to pick one");
    }
    if (target.equals(previous)) {
      return new Moved(previous, previous);
    }
    // What remains of the caller's wait, but never less than an election: a move that Ratis gives
    // up on before its transferee could win re-enables this leader's lease while it may win.
    long left = Math.max(longestElection.toMillis(), Duration.ofNanos(deadline - System.nanoTime()).toMillis());
    log.info("moving the leadership from {} to {} (asked through node {})", previous, target, config.self());
    boolean moved = false;
    try {
      RaftClientReply reply =
          info.isLeader()
              ? server.transferLeadershipAsync(localRequest(target, left)).join()
              : client.admin().transferLeadership(RaftPeerId.valueOf(target), left);
      if (!reply.isSuccess()) {
        throw new IllegalStateException("the leadership did not move to " + target + ": " + reply);
      }
      moved = true;
    } catch (IOException e) {
      throw new CompletionException(e);
    } finally {
      if (info.isLeader() && !moved) {
        // Ratis disabled this leader's lease for the move and, when the move failed or timed out,
        // enabled it again. But the transferee may have started its election anyway (it was told
        // to stand) and may still win it: voters grant a higher term's vote without asking
        // whether they heard a leader lately. Until that election is surely over, a read
        // confirmed from the lease could be answered by a deposed leader: refuse reads (and so
        // keep-alive confirmations) here for one longest election timeout.
        refuseReadsFor.accept(longestElection);
      }
    }
    log.info(
        "leadership moved from {} to {} in {} ms (asked through node {})",
        previous, target, Duration.ofNanos(System.nanoTime() - started).toMillis(), config.self());
    return new Moved(previous, target);
  }

  /**
   * A move asked of this node's own Raft server, which leads: no round trip through the node's
   * Ratis client, which may first try another node (its idea of the leader) and pause before it
   * tries again — on a loaded machine a fifth of a second in which the leader still accepts writes
   * it must later hand over.
   */
  private TransferLeadershipRequest localRequest(String target, long timeoutMs) {
    return new TransferLeadershipRequest(
        CLIENT_ID, server.getId(), group, callIds.incrementAndGet(), RaftPeerId.valueOf(target), timeoutMs);
  }

  /**
   * The leader this node knows, once it knows one: a node that has just started, or one
   * during an election, knows none for a moment, and the caller gave the move time anyway.
   */
  private RaftPeerId awaitKnownLeader(long deadline) {
    // DivisionInfo is a live view: the leader id is read once per look, as an election can clear
    // it between two reads.
    java.util.concurrent.atomic.AtomicReference<RaftPeerId> leader = new java.util.concurrent.atomic.AtomicReference<>();
    if (!Polling.until(() -> {
      leader.set(info().getLeaderId());
      return leader.get() != null;
    }, deadline)) {
      throw new NotNowException(
          Thread.currentThread().isInterrupted()
              ? "node " + config.self() + " is stopping"
              : "node " + config.self() + " knows no leader (an election is under way?); try again");
    }
    return leader.get();
  }

  private DivisionInfo info() {
    try {
      return server.getDivision(group).getInfo();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Hands the leadership to a follower if this node leads, and waits for it, at most {@code
   * within}: called before the node stops, so that clients do not wait for an election.
   *
   * @return the node that leads now because of it; empty if this node did not lead or the move
   *     failed (logged)
   */
  public Optional<String> handOver(Duration within) {
    try {
      DivisionInfo info = server.getDivision(group).getInfo();
      if (!info.isLeader()) {
        return Optional.empty();
      }
      long deadline = System.nanoTime() + within.toNanos();
      long term = info.getCurrentTerm();
      Moved moved = move(Optional.empty(), within).join();
      boolean serving = awaitAppliedAfter(term, deadline);
      log.info(
          "node {} handed the leadership to {} before stopping{}",
          config.self(), moved.leader(), serving ? "" : " (not seen serving yet)");
      return Optional.of(moved.leader());
    } catch (IOException | RuntimeException e) {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      log.warn(
          "node {} could not hand the leadership over before stopping ({}); the others elect a leader"
              + " after their election timeout",
          config.self(), cause.toString());
      return Optional.empty();
    }
  }

  /**
   * Waits, until {@code deadline}, for this node to apply an entry of a term after {@code term}:
   * the new leader's first entry, which is committed once a majority has it, so from then on the
   * new leader serves. Ratis answers a move as soon as the new leader was elected, before that
   * entry is committed; a node that stopped then would take its vote for that entry, and its
   * snapshot and exit would take CPU and disk from the nodes committing it.
   *
   * @return whether it was applied in time
   */
  private boolean awaitAppliedAfter(long term, long deadline) throws IOException {
    RaftServer.Division division = server.getDivision(group);
    return Polling.until(() -> appliedTerm(division) > term, deadline);
  }

  /** {@return the term of the last log entry {@code division} applied; -1 if none} */
  public static long appliedTerm(RaftServer.Division division) {
    TermIndex applied = division.getStateMachine().getLastAppliedTermIndex();
    return applied == null ? -1 : applied.getTerm();
  }

  /** The follower that answered the leader most recently (so it is up and likely caught up). */
  private static Optional<String> freshestFollower(RoleInfoProto role) {
    return role.getLeaderInfo().getFollowerInfoList().stream()
        .min(Comparator.comparingLong(ServerRpcProto::getLastRpcElapsedTimeMs))
        .map(f -> RaftPeerId.valueOf(f.getId().getId()).toString());
  }

  @Override
  public void close() {
    mover.shutdownNow();
  }
}
