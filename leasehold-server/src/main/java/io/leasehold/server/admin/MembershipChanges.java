package io.leasehold.server.admin;

import io.leasehold.server.DaemonThreads;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.raft.NotNowException;
import io.leasehold.server.raft.PeerSettings;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SetConfigurationRequest;
import org.apache.ratis.protocol.exceptions.RaftRetryFailureException;
import org.apache.ratis.protocol.exceptions.ReconfigurationInProgressException;
import org.apache.ratis.protocol.exceptions.ReconfigurationTimeoutException;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Online membership changes: adding a node that was started with {@code --join}, and removing
 * one, through Ratis's {@code setConfiguration}.
 *
 * <p>Why an added node cannot break safety: Ratis's leader first <em>stages</em> a new node — it
 * sends it the log (or a snapshot) while the node has no vote and counts towards nothing — and
 * proposes the joint configuration only once the node has caught up; the change then commits in
 * the joint configuration (a majority of the old <em>and</em> of the new members), so no moment
 * exists at which two disjoint majorities could elect two leaders. A node started with {@code
 * --join} has an empty configuration: it never campaigns and takes part only once a leader sends
 * it entries, which happens only after it was added.
 *
 * <p>A change is judged done only when this node sees a configuration that holds it, is not a
 * joint one, and is committed: Ratis puts a configuration in force as soon as it is appended, and
 * an appended one can still be rolled back by a new leader.
 */
public final class MembershipChanges implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(MembershipChanges.class);

  /** How long a change waits for the cluster unless told otherwise (a snapshot may have to move). */
  static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

  /** The longest a caller may ask to wait. */
  static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

  /** Fewer voting members than this lose the cluster to one more failure; removal needs force. */
  static final int MIN_VOTERS = 3;

  /** How long the node to add has to answer the check before the change. */
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(3);

  private static final Duration POLL = Duration.ofMillis(100);

  /** The members after a change, who leads, and whether the change changed anything. */
  record Result(List<Peer> members, String leader, boolean changed) {}

  private final NodeConfig config;
  private final RaftServer server;
  private final RaftGroupId group;
  private final Parameters ratisParameters;
  /** How to reach another node's client port over TLS; null in plaintext. */
  private final io.grpc.ChannelCredentials peerTls;
  /** Ratis's admin calls block; changes are rare and one at a time anyway. */
  private final ExecutorService worker;

  public MembershipChanges(
      NodeConfig config, RaftServer server, RaftGroupId group, Parameters ratisParameters, io.grpc.ChannelCredentials peerTls) {
    this.config = config;
    this.server = server;
    this.group = group;
    this.ratisParameters = ratisParameters;
    this.peerTls = peerTls;
    this.worker =
        Executors.newSingleThreadExecutor(DaemonThreads.named("leasehold-membership-" + config.self()));
  }

  /** {@return the voting members as this node's Raft division knows them; empty if it is no member} */
  public List<Peer> members() {
    try {
      return peers(server.getDivision(group).getRaftConf().getCurrentPeers());
    } catch (IOException | RuntimeException e) {
      return List.of();
    }
  }

  /** {@return the id of the leader this node knows, or empty} */
  String leaderId() {
    try {
      RaftPeerId leader = server.getDivision(group).getInfo().getLeaderId();
      return leader == null ? "" : leader.toString();
    } catch (IOException e) {
      return "";
    }
  }

  /** {@return whether this node is a voting member and knows a leader that is one too} */
  boolean knowsCommittedMembers() {
    List<Peer> members = members();
    String leader = leaderId();
    return members.stream().anyMatch(p -> p.id().equals(config.self()))
        && members.stream().anyMatch(p -> p.id().equals(leader));
  }

  /**
   * Adds {@code peer} as a voting member, after checking that it answers as that node (started
   * with {@code --join}) with this node's election timeout.
   *
   * @return completes once the change is committed; with {@link IllegalArgumentException} for a
   *     bad request, {@link NotNowException} when it cannot be made now (nothing changed, or the
   *     change may still complete: ask again)
   */
  CompletableFuture<Result> add(Peer peer, Duration timeout) {
    return run(timeout, deadline -> addNow(peer, deadline));
  }

  /**
   * Removes member {@code id}; refuses to leave fewer than {@link #MIN_VOTERS} voters unless
   * {@code force}.
   */
  CompletableFuture<Result> remove(String id, boolean force, Duration timeout) {
    return run(timeout, deadline -> removeNow(id, force, deadline));
  }

  private interface Change {
    Result apply(long deadline);
  }

  private CompletableFuture<Result> run(Duration timeout, Change change) {
    if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(MAX_TIMEOUT) > 0) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException(
              "timeout must be 1 ms to " + MAX_TIMEOUT.toMillis() + " ms; was " + timeout.toMillis() + " ms"));
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    return CompletableFuture.supplyAsync(() -> change.apply(deadline), worker);
  }

  private Result addNow(Peer peer, long deadline) {
    List<Peer> members = stableMembers(deadline);
    for (Peer m : members) {
      if (m.id().equals(peer.id())) {
        if (m.clientEndpoint().equals(peer.clientEndpoint())) {
          return new Result(members, leaderId(), false);
        }
        throw new IllegalArgumentException(
            "id " + peer.id() + " is a member already, at " + m.clientEndpoint() + "; remove it first or pick a new id");
      }
      if (m.clientEndpoint().equals(peer.clientEndpoint())) {
        throw new IllegalArgumentException(
            "address " + peer.clientEndpoint() + " is member " + m.id() + "'s; remove " + m.id() + " first");
      }
    }
    probe(peer);
    log.info("node {}: adding {} to the members {}", config.self(), peer, members);
    SetConfigurationRequest.Arguments args =
        SetConfigurationRequest.Arguments.newBuilder()
            .setMode(SetConfigurationRequest.Mode.ADD)
            .setServersInNewConf(List.of(raftPeer(peer)))
            .build();
    List<Peer> expected = new ArrayList<>(members);
    expected.add(peer);
    return change(
        members, args, expected, now -> now.stream().anyMatch(p -> p.id().equals(peer.id())), deadline, "add " + peer.id());
  }

  private Result removeNow(String id, boolean force, long deadline) {
    List<Peer> members = stableMembers(deadline);
    if (members.stream().noneMatch(p -> p.id().equals(id))) {
      throw new IllegalArgumentException(
          "id must be a member (" + String.join(", ", members.stream().map(Peer::id).toList()) + "); was '" + id + "'");
    }
    List<Peer> remaining = members.stream().filter(p -> !p.id().equals(id)).toList();
    if (remaining.isEmpty()) {
      throw new IllegalArgumentException("id " + id + " is the only member; a cluster cannot remove its last node");
    }
    if (remaining.size() < MIN_VOTERS && !force) {
      throw new NotNowException(
          "removing " + id + " would leave " + remaining.size() + " voting member(s), fewer than " + MIN_VOTERS
              + " (then one more failure stops the cluster); to replace a node use admin replace-node, which"
              + " adds the new one right after, or force it");
    }
    log.info("node {}: removing {} from the members {}", config.self(), id, members);
    SetConfigurationRequest.Arguments args =
        SetConfigurationRequest.Arguments.newBuilder()
            .setMode(SetConfigurationRequest.Mode.COMPARE_AND_SET)
            .setServersInCurrentConf(members.stream().map(MembershipChanges::raftPeer).toList())
            .setServersInNewConf(remaining.stream().map(MembershipChanges::raftPeer).toList())
            .build();
    return change(members, args, remaining, now -> now.stream().noneMatch(p -> p.id().equals(id)), deadline, "remove " + id);
  }

  /**
   * Sends the change to the leader through a Ratis client of its own (the node's forwarding
   * client has a 3 s request timeout, and a change that moves a snapshot takes longer), then
   * waits until this node sees it committed.
   */
  private Result change(
      List<Peer> members,
      SetConfigurationRequest.Arguments args,
      List<Peer> expected,
      Predicate<List<Peer>> done,
      long deadline,
      String what) {
    long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.GRPC);
    RaftClientConfigKeys.Rpc.setRequestTimeout(p, TimeDuration.valueOf(leftMillis, TimeUnit.MILLISECONDS));
    Throwable failure = null;
    try (RaftClient client =
        RaftClient.newBuilder()
            .setProperties(p)
            .setParameters(ratisParameters)
            .setRaftGroup(RaftGroup.valueOf(group, members.stream().map(MembershipChanges::raftPeer).toList()))
            .setClientId(ClientId.randomId())
            // Follows the leader across an election a few times; a retry of the same call is
            // answered from the leader's retry cache, and a change that is in force is checked below.
            .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(20, TimeDuration.valueOf(200, TimeUnit.MILLISECONDS)))
            .build()) {
      RaftClientReply reply = client.admin().setConfiguration(args);
      if (reply.isSuccess()) {
        // Ratis answers once the new configuration is committed. (A removed node may not hear of
        // it any more, so this node's own view is not waited for.)
        log.info("node {}: {} done", config.self(), what);
        return new Result(committedMembers().filter(done).orElse(sorted(expected)), leaderId(), true);
      }
      failure = reply.getException();
    } catch (IOException | RuntimeException e) {
      failure = e;
    }
    // Done or not, the configuration in force says: a retry after the leader died may fail
    // though the first attempt went through, and a failed change may be completed by the next
    // leader, which finds the joint configuration in its log.
    while (true) {
      Optional<List<Peer>> now = committedMembers();
      if (now.isPresent() && done.test(now.get())) {
        log.info("node {}: {} done; members now {}", config.self(), what, now.get());
        return new Result(now.get(), leaderId(), true);
      }
      if (failure != null && (now.isPresent() || System.nanoTime() - deadline > 0)) {
        throw refusal(failure, what);
      }
      if (System.nanoTime() - deadline > 0) {
        throw new NotNowException(
            "the change (" + what + ") was not committed in time; it may still complete: run the same command"
                + " again to see (it does nothing once the change is in force)");
      }
      sleep();
    }
  }

  static RuntimeException refusal(Throwable failure, String what) {
    Throwable cause = failure;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof ReconfigurationInProgressException) {
      return new NotNowException(
          "another membership change is in progress; wait until it is done (admin members), then try again");
    }
    if (cause instanceof ReconfigurationTimeoutException) {
      return new NotNowException(
          "the new node did not catch up with the leader in time (" + cause.getMessage() + "); nothing changed."
              + " Check that it runs and that the leader reaches its Raft port, then try again");
    }
    if (cause instanceof RaftRetryFailureException) {
      // Its message is Ratis's request dump ("Failed SetConfigurationRequest:client-… for 20
      // attempts with RetryLimited(…)"): what an operator needs is what to do.
      return new NotNowException(
          "the leader did not answer the change (" + what + ") however often it was asked (a leader was being"
              + " elected, or a node the change needs stopped: see the nodes' logs); it may still complete: run"
              + " the same command again to see (it does nothing once the change is in force)");
    }
    String why = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    return new NotNowException("the change (" + what + ") failed: " + why);
  }

  /**
   * The voting members once this node sees a configuration that is committed and not joint (a
   * change under way finishes first, as long as the deadline allows).
   */
  private List<Peer> stableMembers(long deadline) {
    while (true) {
      Optional<List<Peer>> now = committedMembers();
      if (now.isPresent() && !now.get().isEmpty()) {
        return now.get();
      }
      if (System.nanoTime() - deadline > 0) {
        throw new NotNowException(
            "node " + config.self() + " sees no settled membership (another change is in progress, or this node"
                + " is not a member or knows no leader); try again, or ask another node");
      }
      sleep();
    }
  }

  /** {@return the voting members if the configuration in force is committed and not joint} */
  private Optional<List<Peer>> committedMembers() {
    try {
      RaftServer.Division division = server.getDivision(group);
      RaftConfiguration conf = division.getRaftConf();
      if (!conf.getPreviousPeers().isEmpty()
          || conf.getLogEntryIndex() > division.getRaftLog().getLastCommittedIndex()
          || division.getInfo().getLeaderId() == null) {
        return Optional.empty();
      }
      return Optional.of(peers(conf.getCurrentPeers()));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * Asks the node to add on its client port who it is: it must answer, as {@code peer.id()}, with
   * this node's election timeout (the leader lease assumes every voter has the same).
   */
  private void probe(Peer peer) {
    ManagedChannel channel =
        peerTls == null
            ? NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build()
            : NettyChannelBuilder.forAddress(peer.host(), peer.clientPort(), peerTls).build();
    try {
      StatusResponse status =
          LeaseholdGrpc.newBlockingStub(channel)
              .withDeadlineAfter(PROBE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
              .status(StatusRequest.newBuilder().setNodeOnly(true).build());
      NodeStatus node = status.getNodes(0);
      if (!node.getId().equals(peer.id())) {
        throw new IllegalArgumentException(
            "the node at " + peer.clientEndpoint() + " is " + node.getId() + ", not " + peer.id() + "; nothing changed");
      }
      if (node.getElectionTimeoutMs() != config.electionTimeout().toMillis()) {
        throw new NotNowException(
            "node " + peer.id() + " runs with --election-timeout " + PeerSettings.format(node.getElectionTimeoutMs())
                + ", this cluster with " + PeerSettings.format(config.electionTimeout().toMillis())
                + "; restart it with the same (the leader lease assumes it); nothing changed");
      }
    } catch (io.grpc.StatusRuntimeException e) {
      throw new NotNowException(
          "node " + peer.id() + " at " + peer.clientEndpoint() + " does not answer (" + e.getStatus().getCode()
              + "); start it first with `leasehold server --join --id " + peer.id() + " ...`; nothing changed");
    } finally {
      channel.shutdownNow();
    }
  }

  private static void sleep() {
    try {
      Thread.sleep(POLL.toMillis()); // on the worker thread, which exists to wait
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NotNowException("the node is stopping");
    }
  }

  private static List<Peer> sorted(List<Peer> peers) {
    List<Peer> copy = new ArrayList<>(peers);
    copy.sort(java.util.Comparator.comparing(Peer::id));
    return List.copyOf(copy);
  }

  /** Our peer as Ratis knows it: Raft traffic on the port above the client port. */
  public static RaftPeer raftPeer(Peer p) {
    return RaftPeer.newBuilder().setId(p.id()).setAddress(p.host() + ":" + p.raftPort()).build();
  }

  /** Ratis's peers as ours: the client port is the one below the Raft port. */
  static List<Peer> peers(Collection<RaftPeer> raftPeers) {
    List<Peer> peers = new ArrayList<>();
    for (RaftPeer r : raftPeers) {
      String address = r.getAddress();
      int colon = address.lastIndexOf(':');
      peers.add(new Peer(r.getId().toString(), address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)) - 1));
    }
    peers.sort(java.util.Comparator.comparing(Peer::id));
    return List.copyOf(peers);
  }

  @Override
  public void close() {
    worker.shutdownNow();
  }
}
