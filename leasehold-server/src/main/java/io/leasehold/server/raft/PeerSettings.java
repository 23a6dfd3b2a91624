package io.leasehold.server.raft;

import io.leasehold.server.DaemonThreads;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.StartRefusedException;

import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks that every node of the cluster runs with this node's election timeout.
 *
 * <p>Keep-alives and reads are confirmed from the Raft leader's lease (Ratis's {@code
 * read.leader.lease}): the leader answers without a heartbeat round while a majority acknowledged
 * it within 90% of <em>its own</em> shortest election timeout, trusting that no follower grants a
 * pre-vote to another candidate for <em>its own</em> shortest election timeout after it last heard
 * the leader. A follower with a shorter timeout breaks that: a new leader can be elected while the
 * old one still answers from its lease, so a keep-alive could be confirmed by a deposed leader.
 *
 * <p>Ratis carries no settings between nodes, so each node asks the others through the client
 * protocol ({@code Status} with {@code node_only}, on the client port): once before it starts
 * (a node that finds another with a different timeout refuses to start), and every second while
 * it runs (two nodes started at the same moment miss each other at start). A node that has seen a
 * different timeout refuses to answer reads and keep-alives until that node reports the same
 * timeout again; a node that does not answer keeps its last reported value. A node that answers
 * without a timeout (an older version) and one that cannot be reached are not judged.
 */
public final class PeerSettings implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(PeerSettings.class);

  /** How often a running node asks the others. */
  static final Duration POLL_EVERY = Duration.ofSeconds(1);

  /** How long one question of the running node may take. */
  private static final Duration POLL_DEADLINE = Duration.ofSeconds(1);

  private static final StatusRequest NODE_ONLY = StatusRequest.newBuilder().setNodeOnly(true).build();

  private final NodeConfig config;
  private final long ownMillis;
  private final Map<String, ManagedChannel> channels = new LinkedHashMap<>();
  private final Map<String, AtomicBoolean> asking = new ConcurrentHashMap<>();
  /** Each other node's election timeout as it last reported it. */
  private final Map<String, Long> reported = new ConcurrentHashMap<>();
  /** Each other node's voting members as it last reported them (not kept when it reports none). */
  private final Map<String, List<String>> reportedMembers = new ConcurrentHashMap<>();
  /** Whether each other node that answered has access control on in its applied state. */
  private final Map<String, Boolean> reportedAccessControl = new ConcurrentHashMap<>();
  private final ScheduledExecutorService poller;
  /** Null until {@link #watch}: the start check refuses with one line of its own, no log. */
  private volatile Consumer<Optional<String>> listener;
  private volatile Optional<String> problem = Optional.empty();

  /**
   * @param config the node
   * @param tls how to reach the other nodes' client ports over TLS (this node's certificate as
   *     the client's); null for plaintext
   */
  public PeerSettings(NodeConfig config, io.grpc.ChannelCredentials tls) {
    this.config = config;
    this.ownMillis = config.electionTimeout().toMillis();
    for (Peer p : config.peers()) {
      if (!p.id().equals(config.self())) {
        channels.put(
            p.id(),
            tls == null
                ? NettyChannelBuilder.forAddress(p.host(), p.clientPort()).usePlaintext().build()
                : NettyChannelBuilder.forAddress(p.host(), p.clientPort(), tls).build());
        asking.put(p.id(), new AtomicBoolean());
      }
    }
    this.poller =
        Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leasehold-peer-settings-" + config.self()));
  }

  /**
   * Asks every other node once and waits for the answers, at most {@code atMost}. A node that is
   * down refuses the connection at once; only one that hangs (frozen, cut off) costs the wait.
   *
   * @param atMost how long to wait for a node's answer
   * @throws StartRefusedException if a node that answered runs with another election timeout
   */
  public void refuseStartIfAnyDisagrees(Duration atMost) {
    CountDownLatch answered = new CountDownLatch(channels.size());
    for (String peer : channels.keySet()) {
      ask(peer, atMost, answered::countDown);
    }
    try {
      answered.await(atMost.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Map.Entry<String, Long> e : reported.entrySet()) {
      if (e.getValue() != ownMillis) {
        throw new StartRefusedException(
            "node " + config.self() + " refuses to start: its --election-timeout is " + format(ownMillis)
                + ", but " + e.getKey() + " runs with " + format(e.getValue())
                + "; every node of a cluster needs the same --election-timeout (the Raft leader lease"
                + " that confirms keep-alives and reads assumes it)");
      }
    }
  }

  /**
   * For a node started with {@code --join}, after {@link #refuseStartIfAnyDisagrees}: a node that
   * answered and still lists this node's id among its voting members knows this id as a member
   * with a log. This node's directory is empty (a wiped disk, or a new node given an old id): it
   * must not take part under that id, since it could vote with a shorter log than the one the id
   * acknowledged, and its peers would keep sending to it as if it had that log.
   *
   * @throws StartRefusedException naming the way to bring the node back: a replace under a new id
   */
  public void refuseJoinIfStillAMember() {
    for (Map.Entry<String, List<String>> e : reportedMembers.entrySet()) {
      if (e.getValue().contains(config.self())) {
        throw new StartRefusedException(
            "node " + config.self() + " refuses to join: " + e.getKey() + " still lists " + config.self()
                + " among the cluster's members (" + String.join(", ", e.getValue()) + "), so this id has a log"
                + " that an empty --data-dir does not hold and must not vote with; bring the node back under a"
                + " new id: start it with --join --id NEWID, then `leasehold admin replace-node " + config.self()
                + " NEWID=host:port`");
      }
    }
  }

  /**
   * {@return why a node that joined the cluster must not serve while its own state has no ACL:
   * a peer has access control on, or no peer has answered yet; null when every peer that
   * answered has it off (access control is set when a cluster is made and never turned on later)}
   */
  public String accessControlUnknownOrOn() {
    if (reportedAccessControl.isEmpty()) {
      return "node " + config.self() + " joined the cluster and has heard from no other node whether access control is on";
    }
    for (Map.Entry<String, Boolean> e : reportedAccessControl.entrySet()) {
      if (e.getValue()) {
        return "node " + config.self() + " joined the cluster, whose node " + e.getKey()
            + " has access control on, and has not applied the ACL yet";
      }
    }
    return null;
  }

  /**
   * Asks the other nodes every {@link #POLL_EVERY} from now on.
   *
   * @param onChange told the problem (present while some node disagrees) each time it changes
   */
  public void watch(Consumer<Optional<String>> onChange) {
    synchronized (this) {
      listener = onChange;
      onChange.accept(problem);
    }
    poller.scheduleWithFixedDelay(
        () -> channels.keySet().forEach(peer -> ask(peer, POLL_DEADLINE, () -> {})),
        0,
        POLL_EVERY.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** {@return why this node refuses reads: the nodes that run with another election timeout} */
  public Optional<String> problem() {
    return problem;
  }

  private void ask(String peer, Duration deadline, Runnable done) {
    AtomicBoolean busy = asking.get(peer);
    if (!busy.compareAndSet(false, true)) {
      done.run();
      return;
    }
    ManagedChannel channel = channels.get(peer);
    StreamObserver<StatusResponse> answer =
        new StreamObserver<>() {
          @Override
          public void onNext(StatusResponse response) {
            if (response.getNodesCount() > 0) {
              reportedAccessControl.put(peer, response.getNodes(0).getAccessControl());
            }
            if (response.getNodesCount() > 0 && response.getNodes(0).getMemberIdsCount() > 0) {
              reportedMembers.put(peer, List.copyOf(response.getNodes(0).getMemberIdsList()));
            }
            if (response.getNodesCount() > 0 && response.getNodes(0).getElectionTimeoutMs() > 0) {
              observe(peer, response.getNodes(0).getElectionTimeoutMs());
            }
          }

          @Override
          public void onError(Throwable t) {
            // Down, cut off or starting: its last reported value stands.
            log.debug("node {}: {} did not say its settings: {}", config.self(), peer, t.toString());
            busy.set(false);
            done.run();
          }

          @Override
          public void onCompleted() {
            busy.set(false);
            done.run();
          }
        };
    try {
      // After a refused connection gRPC backs off for up to minutes; a node that comes up must
      // be asked at once.
      if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
        channel.resetConnectBackoff();
      }
      LeaseholdGrpc.newStub(channel)
          .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
          .status(NODE_ONLY, answer);
    } catch (RuntimeException e) { // the channel was shut down: this node stops
      busy.set(false);
      done.run();
    }
  }

  /** Records what {@code peer} reported and tells the listener if the verdict changed. */
  void observe(String peer, long electionTimeoutMillis) {
    synchronized (this) {
      reported.put(peer, electionTimeoutMillis);
      Optional<String> now = judge();
      if (now.equals(problem)) {
        return;
      }
      problem = now;
      if (listener == null) {
        return;
      }
      if (now.isPresent()) {
        log.error("node {}: {}", config.self(), now.get());
      } else {
        log.info(
            "node {}: every node that answers runs with election timeout {} again; serving reads and keep-alives",
            config.self(), format(ownMillis));
      }
      listener.accept(now);
    }
  }

  private Optional<String> judge() {
    List<String> others = new ArrayList<>();
    for (String peer : channels.keySet()) {
      Long millis = reported.get(peer);
      if (millis != null && millis != ownMillis) {
        others.add(peer + " " + format(millis));
      }
    }
    if (others.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        "election timeouts disagree: " + config.self() + " (this node) runs with " + format(ownMillis) + ", "
            + String.join(", ", others) + "; refusing reads and keep-alives, which rest on the Raft leader"
            + " lease that assumes every node has the same --election-timeout, until they agree");
  }

  /** {@code 300ms}, {@code 2s}, {@code 1m}, {@code 720h}: as the command line takes it. */
  public static String format(long millis) {
    if (millis != 0 && millis % 3_600_000 == 0) {
      return millis / 3_600_000 + "h";
    }
    if (millis % 60_000 == 0) {
      return millis / 60_000 + "m";
    }
    if (millis % 1000 == 0) {
      return millis / 1000 + "s";
    }
    return millis + "ms";
  }

  @Override
  public void close() {
    poller.shutdownNow();
    channels.values().forEach(ManagedChannel::shutdownNow);
  }
}
