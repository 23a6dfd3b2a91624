package io.leasehold.server.raft;

import io.leasehold.server.CoreNode;
import io.leasehold.server.DaemonThreads;
import io.leasehold.server.replicated.CoreState;

import io.leasehold.server.state.Command;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.retry.RequestTypeDependentRetryPolicy;
import org.apache.ratis.proto.RaftProtos.RaftClientRequestProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.LeaderSteppingDownException;
import org.apache.ratis.protocol.exceptions.NotLeaderException;
import org.apache.ratis.protocol.exceptions.ResourceUnavailableException;
import org.apache.ratis.retry.ExponentialBackoffRetry;
import org.apache.ratis.retry.RetryPolicy;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.TimeDuration;

/**
 * A node's way into the Raft group: writes go through the log, reads through the leader's
 * ReadIndex.
 *
 * <p>On the leader, requests go straight into the local Raft server: no loopback hop, and no
 * ordered client window to wait in. Anywhere else, and when the local server turns out not to lead
 * (any more), Ratis's client inside this node forwards them to the leader and follows it across
 * elections, within a bounded retry policy. Forwarding is admitted without ever blocking the
 * caller: Ratis's ordered client blocks its caller's thread once {@link #MAX_FORWARDED} requests
 * are outstanding, which under a burst parked thousands of gRPC threads; here the excess waits in
 * a queue (at most {@link #MAX_QUEUED}, then it is refused as overload) and is sent as replies come
 * back.
 *
 * <p><b>Forwarding is bounded in time</b>, so that deduplication can be bounded too (see {@link
 * CoreState}): a write waits at most {@link #QUEUE_WAIT} in the queue, and Ratis's client makes no
 * new attempt once {@link #FORWARD_WINDOW} minus that has passed since its first: no copy of a
 * call leaves this node later than {@link #FORWARD_WINDOW} after the node received it. Each write
 * also carries the cluster time at which this node received it, so that the state refuses a copy
 * that reached the log later than a call may take, however the network delayed it.
 *
 * <p><b>Leader-only commands are never forwarded</b> ({@link #writeLocally}): they are decided in
 * a term and must be appended in it, by the node that decided them.
 */
public final class RaftGateway implements AutoCloseable {

  /** Requests forwarded at once; also the Ratis client's own window, so it never blocks. */
  public static final int MAX_FORWARDED = 512;

  /** Requests waiting to be forwarded before more are refused. */
  static final int MAX_QUEUED = 100_000;

  /** How long after receiving a write this node may still send a copy of it to the leader. */
  public static final Duration FORWARD_WINDOW = Duration.ofSeconds(15);

  /** How long a write may wait in the queue before it is first sent; then it is refused. */
  static final Duration QUEUE_WAIT = Duration.ofSeconds(5);

  private final RaftServer server;
  private final RaftGroupId groupId;
  /** The Ratis client to forward a write with now (see {@link LeaderClients}). */
  private final Supplier<RaftClient> writeClient;
  /**
   * The Ratis client to forward a read with now: another than the writes'. Ratis's ordered client
   * has a client's calls handled in the order it sent them (and after a failure sends again from
   * the oldest unanswered one), and a read that a follower holds while it asks a dead leader for a
   * read index holds up to Ratis's 3 s request timeout (seen in failover runs, BENCHMARKS.md stop
   * 21): with one client, every write behind that read waited as long. Both share the forwarding
   * permits below.
   */
  private final Supplier<RaftClient> readClient;
  /** Identifies this node's direct submissions to Ratis's retry cache; call ids never repeat. */
  private final ClientId localClientId = ClientId.randomId();
  private final AtomicLong callIds = new AtomicLong();
  private final Semaphore forwardPermits = new Semaphore(MAX_FORWARDED);
  private final Queue<Waiting> waiting = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private volatile ClusterClock clock;

  /** A request waiting for a forwarding permit since {@code sinceNanos}. */
  private record Waiting(long sinceNanos, Runnable send, CompletableFuture<RaftClientReply> result) {}

  /** Hands out replies, off Ratis's applying thread and off the gRPC event loops. */
  private final ExecutorService replies;
  /** Sends again, after a pause, the calls a leader refused while it handed its leadership over. */
  private final Resends retries;
  private final EntryBatcher batcher;

  public RaftGateway(RaftServer server, RaftGroupId groupId, Supplier<RaftClient> writeClient, Supplier<RaftClient> readClient) {
    this.server = server;
    this.groupId = groupId;
    this.writeClient = writeClient;
    this.readClient = readClient;
    this.replies =
        Executors.newFixedThreadPool(
            2, DaemonThreads.named("leasehold-replies-" + server.getId()));
    this.retries = new Resends(server.getId().toString());
    this.batcher = new EntryBatcher(this::writeEntry, replies, server.getId().toString());
  }

  /**
   * The pauses between attempts of a forwarded call, for Ratis's client and for this gateway's own
   * re-sends alike: 5 ms doubling to 100 ms, randomised ±50 %. Short first pauses because the usual
   * reason to try again is a leader that is ready a round trip later (a new leader commits its
   * first entry, a hand-over ends); the cap keeps an election's worth of retries of hundreds of
   * waiting calls from flooding the nodes.
   */
  private static final RetryPolicy BACKOFF =
      ExponentialBackoffRetry.newBuilder()
          .setBaseSleepTime(TimeDuration.valueOf(5, TimeUnit.MILLISECONDS))
          .setMaxSleepTime(TimeDuration.valueOf(100, TimeUnit.MILLISECONDS))
          .setMaxAttempts(Integer.MAX_VALUE)
          .build();

  /**
   * The longest pause between attempts of a forwarded call while a leader is up: one that refused
   * the call only because it has not yet committed its first entry, or one this node heard from
   * lately ({@link #leaderHeardWithinMs}). Such a leader serves within a round or two, and a call
   * that slept {@link #BACKOFF}'s 100 ms through that moment waited most of it for nothing (stop
   * 18's failover logs: 150–380 ms from the new leader leading to the forwarded call answered).
   * While no leader is up (an election), the pauses stay long, so that hundreds of waiting calls
   * do not flood the candidates; an overloaded leader ({@link ResourceUnavailableException}) gets
   * the long pauses too.
   */
  static final long LEADER_UP_MAX_PAUSE_MS = 20;

  /**
   * {@return how recently a follower must have heard from its leader for it to count as up}:
   * three quarters of the shortest election timeout. An idle leader sends a heartbeat half that
   * timeout after its follower's last answer (Ratis's {@code LogAppender.getHeartbeatWaitTimeMs}),
   * so a live leader is always heard within it, and a follower doubts a silent one only after a
   * whole timeout.
   */
  public static long leaderHeardWithinMs(Duration shortestElectionTimeout) {
    return shortestElectionTimeout.toMillis() * 3 / 4;
  }

  /**
   * The retry policy of the node's internal Ratis client: {@link #BACKOFF}, its pauses above {@link
   * #LEADER_UP_MAX_PAUSE_MS} cut to 10–20 ms while a leader is up ({@code leaderUp}, or the refusal
   * says the leader is elected but not ready yet), and no new attempt once {@link #FORWARD_WINDOW}
   * minus {@link #QUEUE_WAIT} has passed since the first (Ratis's default retries forever without
   * sleeping; a client call has a deadline anyway). Ratis itself skips the pause when a refusal
   * names the leader.
   */
  public static RetryPolicy forwardRetryPolicy(java.util.function.BooleanSupplier leaderUp) {
    RetryPolicy pauses = event -> pause(event, leaderUp);
    TimeDuration window = TimeDuration.valueOf(FORWARD_WINDOW.minus(QUEUE_WAIT).toMillis(), TimeUnit.MILLISECONDS);
    RequestTypeDependentRetryPolicy.Builder policy = RequestTypeDependentRetryPolicy.newBuilder();
    for (RaftClientRequestProto.TypeCase type : RaftClientRequestProto.TypeCase.values()) {
      policy.setRetryPolicy(type, pauses).setTimeout(type, window);
    }
    return policy.build();
  }

  private static RetryPolicy.Action pause(RetryPolicy.Event event, java.util.function.BooleanSupplier leaderUp) {
    RetryPolicy.Action backoff = BACKOFF.handleAttemptFailure(event);
    long millis = backoff.getSleepTime().toLong(TimeUnit.MILLISECONDS);
    Throwable cause = event.getCause();
    if (millis <= LEADER_UP_MAX_PAUSE_MS
        || cause instanceof ResourceUnavailableException
        || !(cause instanceof LeaderNotReadyException || leaderUp.getAsBoolean())) {
      return backoff;
    }
    // Randomised like BACKOFF's, so that calls refused together do not come back together.
    TimeDuration shorter =
        TimeDuration.valueOf(
            java.util.concurrent.ThreadLocalRandom.current().nextLong(LEADER_UP_MAX_PAUSE_MS / 2, LEADER_UP_MAX_PAUSE_MS + 1),
            TimeUnit.MILLISECONDS);
    return () -> shorter;
  }

  /**
   * {@return whether the node whose division {@code info} describes knows a leader that is up}:
   * it leads and is ready, or it follows a leader it heard from within {@code heardWithinMs}. A
   * follower still names a leader that died until its election timeout, so the name alone says
   * nothing; nor does a follower that has no record of hearing from one.
   */
  public static boolean leaderUp(DivisionInfo info, long heardWithinMs) {
    if (info.isLeader()) {
      return info.isLeaderReady();
    }
    if (info.getLeaderId() == null || !info.isFollower()) {
      return false;
    }
    RoleInfoProto role = info.getRoleInfoProto();
    return role.hasFollowerInfo()
        && role.getFollowerInfo().hasLeaderInfo()
        && role.getFollowerInfo().getLeaderInfo().getLastRpcElapsedTimeMs() < heardWithinMs;
  }

  /** {@return whether {@code server} knows a leader of {@code group} that is up ({@link #leaderUp(DivisionInfo, long)})} */
  public static boolean leaderUp(RaftServer server, RaftGroupId group, long heardWithinMs) {
    try {
      return leaderUp(server.getDivision(group).getInfo(), heardWithinMs);
    } catch (IOException | RuntimeException gone) {
      return false; // the group is not (or no longer) on this server
    }
  }

  /**
   * {@return the pause before attempt {@code attempt} + 1 of a call this gateway sends again, in
   * ns}: {@link #BACKOFF}'s whole. The calls it sends again were refused by a leader handing its
   * leadership over, which is up but refuses until the move ends; short pauses would only loop.
   */
  static long pauseNanos(int attempt) {
    return BACKOFF.handleAttemptFailure(() -> attempt).getSleepTime().toLong(TimeUnit.NANOSECONDS);
  }

  /**
   * Appends a client's {@code command} to the log, through the leader, in an entry of its own or
   * together with other writes ({@link EntryBatcher}), and completes with its reply once it is
   * applied. The command carries the cluster time at which this node took it.
   */
  public CompletableFuture<Reply> write(Command command) {
    return batcher.write(command.toBuilder().setReceivedMillis(clusterNow()).build());
  }

  /** Appends one entry (a command, or a batch of them) and completes with its reply. */
  private CompletableFuture<Reply> writeEntry(Command entry) {
    return send(message(entry.toByteArray()), RaftClientRequest.writeRequestType(), m -> writeClient.get().async().send(m))
        .thenApply(RaftGateway::reply);
  }

  /**
   * Appends a leader-only {@code command} through the local Raft server, never forwarding it:
   * completes exceptionally (and appends nothing) when this node does not lead.
   */
  public CompletableFuture<Reply> writeLocally(Command command) {
    if (!leadsHere()) {
      return CompletableFuture.failedFuture(
          new NotLeaderException(RaftGroupMemberId.valueOf(server.getId(), groupId), null, null));
    }
    try {
      return submitHere(localRequest(message(command.toByteArray()), RaftClientRequest.writeRequestType()))
          .thenApply(RaftGateway::reply);
    } catch (IOException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  
  private long clusterNow() {
    ClusterClock c = clock;
    if (c == null) {
      try {
        c = ((LeaseStateMachine) server.getDivision(groupId).getStateMachine()).clock();
        clock = c;
      } catch (IOException e) {
        return 0; // not part of the group (any more): no origin, the copy is not aged
      }
    }
    try {
      return c.leaderNow(server.getDivision(groupId).getInfo().getCurrentTerm());
    } catch (IOException e) {
      return c.estimate();
    }
  }

  private static Reply reply(RaftClientReply reply) {
    try {
      return Reply.parseFrom(content(reply));
    } catch (IOException e) {
      throw new UncheckedIOException("malformed reply from the state machine", e);
    }
  }

  /** Runs {@code query} on the leader after a ReadIndex round; completes with its answer. */
  public CompletableFuture<byte[]> read(Query query) {
    return send(message(query.toByteArray()), RaftClientRequest.readRequestType(), m -> readClient.get().async().sendReadOnly(m))
        .thenApply(RaftGateway::content);
  }

  private CompletableFuture<RaftClientReply> send(
      Message message,
      RaftClientRequest.Type type,
      Function<Message, CompletableFuture<RaftClientReply>> forward) {
    if (!leadsHere()) {
      return forwarded(message, forward);
    }
    CompletableFuture<RaftClientReply> local;
    try {
      local = submitHere(localRequest(message, type));
    } catch (IOException e) {
      return forwarded(message, forward);
    }
    // Leadership can move between the check and the submission: then the leader is elsewhere.
    return local.thenCompose(
        reply -> ledElsewhere(reply) ? forwarded(message, forward) : CompletableFuture.completedFuture(reply));
  }

  /**
   * Submits {@code request} to this node's Raft server on the calling thread. Ratis's
   * {@code RaftServer.submitClientRequestAsync} hands every call to the server's client executor
   * and blocks the caller until that thread has queued it: two thread switches per call, at one
   * call in flight a large part of a write's cost on 2 cores, and nothing gained, since the group's
   * server does the same work (the same lock, the same log queue) on whichever thread calls it.
   * The proxy's way stays as a fallback for a Ratis whose divisions stop taking calls themselves
   * (slower, not wrong; {@code SubmitOnCallerThreadTest} would say so).
   */
  private CompletableFuture<RaftClientReply> submitHere(RaftClientRequest request) throws IOException {
    RaftServer.Division division = server.getDivision(groupId);
    return division instanceof RaftClientAsynchronousProtocol direct
        ? direct.submitClientRequestAsync(request)
        : server.submitClientRequestAsync(request);
  }

  private RaftClientRequest localRequest(Message message, RaftClientRequest.Type type) {
    return RaftClientRequest.newBuilder()
        .setClientId(localClientId)
        .setServerId(server.getId())
        .setGroupId(groupId)
        .setCallId(callIds.incrementAndGet())
        .setMessage(message)
        .setType(type)
        // As long as the forwarding client waits, so nothing pending outlives its caller.
        .setTimeoutMs(CoreNode.RATIS_REQUEST_TIMEOUT.toMillis())
        .build();
  }

  /** {@return whether the local Raft server leads the group now} */
  public boolean leadsHere() {
    try {
      return server.getDivision(groupId).getInfo().isLeader();
    } catch (IOException e) {
      return false; // the group is not (or no longer) on this server
    }
  }

  private static boolean ledElsewhere(RaftClientReply reply) {
    return reply.getNotLeaderException() != null
        || reply.getLeaderNotReadyException() != null
        || reply.getLeaderSteppingDownException() != null;
  }

  private CompletableFuture<RaftClientReply> forwarded(
      Message message, Function<Message, CompletableFuture<RaftClientReply>> forward) {
    CompletableFuture<RaftClientReply> result = new CompletableFuture<>();
    long since = System.nanoTime();
    Runnable send = () -> sendForwarded(message, forward, result, since, 0);
    if (forwardPermits.tryAcquire()) {
      send.run();
      return result;
    }
    if (queued.incrementAndGet() > MAX_QUEUED) {
      queued.decrementAndGet();
      result.completeExceptionally(
          new ResourceUnavailableException(
              "node " + server.getId() + " is overloaded: " + MAX_QUEUED + " requests already wait for the leader"));
      return result;
    }
    waiting.add(new Waiting(since, send, result));
    drain(); // a permit may have come back between tryAcquire and add
    return result;
  }

  /**
   * Sends one copy of a forwarded call, holding a permit. A leader handing its leadership over
   * refuses writes until the new one leads (Ratis's {@link LeaderSteppingDownException}, which its
   * client does not retry): the copy is sent again after a {@link #BACKOFF} pause instead of failing the
   * client's call, for as long as the call could have waited in the queue ({@link #QUEUE_WAIT}
   * since it was first forwarded). The refused copy was not appended, and the copy sent after it
   * has Ratis's whole retry window, so no copy leaves this node later than {@link
   * #FORWARD_WINDOW} after the first, as {@link CoreState}'s deduplication needs.
   */
  private void sendForwarded(
      Message message,
      Function<Message, CompletableFuture<RaftClientReply>> forward,
      CompletableFuture<RaftClientReply> result,
      long since,
      int attempt) {
    forward
        .apply(message)
        .whenComplete(
            (reply, error) -> {
              if (steppingDown(reply, error) && resendLater(message, forward, result, since, attempt)) {
                return;
              }
              forwardPermits.release();
              drain();
              if (error != null) {
                result.completeExceptionally(error);
              } else {
                result.complete(reply);
              }
            });
  }

  /**
   * Schedules the next copy of a call a stepping-down leader refused, if there is time left for it.
   * {@return whether it was scheduled}; false once the queue's wait is used up or the node stops
   */
  private boolean resendLater(
      Message message,
      Function<Message, CompletableFuture<RaftClientReply>> forward,
      CompletableFuture<RaftClientReply> result,
      long since,
      int attempt) {
    long pause = pauseNanos(attempt);
    if (System.nanoTime() + pause - since >= QUEUE_WAIT.toNanos()) {
      return false;
    }
    // The node is stopping if it is refused: then answer with what the leader said.
    return retries.after(pause, () -> sendForwarded(message, forward, result, since, attempt + 1));
  }

  /**
   * This node applied the first entry of a new term, so that term's leader serves: the copies a
   * stepping-down leader refused go out now, through the client that starts at the new leader,
   * rather than after the rest of their pause (up to {@link #BACKOFF}'s 100 ms, spent after the
   * move ended). Not at the first word of a new leader, which comes before it is ready: its "not
   * ready" refusal would close the client's stream, and Ratis then tries a member at random.
   */
  public void leaderServing() {
    retries.now();
  }

  /** {@return whether a copy was refused because its leader is handing the leadership over} */
  private static boolean steppingDown(RaftClientReply reply, Throwable error) {
    if (reply != null) {
      return reply.getLeaderSteppingDownException() != null;
    }
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    return cause instanceof LeaderSteppingDownException;
  }

  /** Sends waiting requests while permits last; refuses those that waited too long. */
  private void drain() {
    while (!waiting.isEmpty() && forwardPermits.tryAcquire()) {
      Waiting next = waiting.poll();
      if (next == null) {
        forwardPermits.release();
        return;
      }
      queued.decrementAndGet();
      if (System.nanoTime() - next.sinceNanos() > QUEUE_WAIT.toNanos()) {
        forwardPermits.release();
        next.result().completeExceptionally(
            new ResourceUnavailableException(
                "node " + server.getId() + " is overloaded: the request waited more than " + QUEUE_WAIT.toSeconds()
                    + " s to be forwarded to the leader; not sent"));
        continue;
      }
      next.send().run();
    }
  }

  /**
   * Waits, until {@code deadline} (System.nanoTime), for every write and read this node took to
   * be answered: none waits for an entry, is on its way through the log, or is being forwarded.
   * A node that has just handed its leadership over holds the calls it took during the move,
   * forwarded to the new leader, which answers them within a round trip or two of being ready;
   * closing before then cancels them, and each client sends its call again through a node that
   * may not know the leader yet (measured in a failover's logs: 200–570 ms more).
   *
   * @return whether it was idle in time
   */
  public boolean awaitIdle(long deadline) {
    return Polling.until(
        () -> batcher.idle() && queued.get() == 0 && forwardPermits.availablePermits() == MAX_FORWARDED, deadline);
  }

  /** Stops its threads; the node is closing. */
  @Override
  public void close() {
    // Calls waiting to be sent again are sent now: the client is still open, so each gets an
    // answer (or Ratis's refusal) rather than none until its deadline. Replies waiting for a
    // thread are handed out here, and later ones on the thread that completes them (EntryBatcher).
    retries.close();
    replies.shutdownNow().forEach(Runnable::run);
  }

  private static byte[] content(RaftClientReply reply) {
    if (!reply.isSuccess()) {
      throw new CompletionException(reply.getException());
    }
    return reply.getMessage().getContent().toByteArray();
  }

  private static Message message(byte[] bytes) {
    return Message.valueOf(UnsafeByteOperations.unsafeWrap(bytes));
  }
}
