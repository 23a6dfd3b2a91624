package io.leasehold.server;

import io.leasehold.server.admin.LeadershipTransfer;
import io.leasehold.server.admin.MembershipChanges;
import io.leasehold.server.edge.AccessControl;
import io.leasehold.server.edge.AddresseeCheck;
import io.leasehold.server.edge.ClientIdentity;
import io.leasehold.server.edge.ClientService;
import io.leasehold.server.edge.ConnectionCap;
import io.leasehold.server.edge.LeaderHint;
import io.leasehold.server.edge.LimitChecks;
import io.leasehold.server.edge.RetryMark;
import io.leasehold.server.edge.WatchHub;
import io.leasehold.server.raft.ClusterClock;
import io.leasehold.server.raft.LeaderClients;
import io.leasehold.server.raft.LeaderRefusals;
import io.leasehold.server.raft.LeaseStateMachine;
import io.leasehold.server.raft.PeerSettings;
import io.leasehold.server.raft.Polling;
import io.leasehold.server.raft.RaftGateway;
import io.leasehold.server.raft.SessionExpiry;
import io.leasehold.server.raft.SessionKeeper;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.replicated.TenureChange;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.server.state.AclInit;
import io.leasehold.server.state.Command;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node of the consistent core: a Raft server (Ratis) running the {@link LeaseStateMachine},
 * the client protocol on its client port, and the leader's expiry loop.
 *
 * <p>The data directory keeps the Raft log and snapshots; a node started again on the same
 * directory recovers them, so a whole cluster can be stopped and started without losing keys or
 * sessions (sessions are re-armed for a full TTL when a leader is elected).
 */
public final class CoreNode implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(CoreNode.class);

  /** One Raft group serves the whole key space; its id is fixed so restarts find their storage. */
  public static final RaftGroupId GROUP_ID =
      RaftGroupId.valueOf(UUID.nameUUIDFromBytes("leasehold-core".getBytes(StandardCharsets.UTF_8)));

  private static final long EXPIRY_TICK_MILLIS = 20;

  /** How long one request inside Ratis may take before it is failed (and retried by the caller). */
  public static final Duration RATIS_REQUEST_TIMEOUT = Duration.ofSeconds(3);

  /** The leader lease lasts this part of the shortest election timeout (Ratis's default). */
  static final double LEADER_LEASE_RATIO = 0.9;

  /**
   * How often a watcher is told the revision it has been sent everything up to, while the node's
   * revision moves: a watcher resuming elsewhere starts at most this far back, which every node
   * but one restarted within it still has in its history.
   */
  static final Duration WATCH_PROGRESS_INTERVAL = Duration.ofSeconds(1);

  /**
   * How long a stopping node waits for its client connections to close before it closes its Raft
   * server: normally a few ms; the bound only keeps a wedged connection from holding up the stop.
   */
  static final Duration CLIENT_CLOSE_WAIT = Duration.ofSeconds(1);

  /** How long a starting node waits for another node to tell its settings (one that hangs). */
  static final Duration START_CHECK_TIMEOUT = Duration.ofSeconds(3);

  /**
   * The shortest interval between a client's HTTP/2 pings that the node accepts. Clients ping to
   * find a dead connection within seconds ({@code CoreClient} every 10 s while it has a call open,
   * and a keep-alive stream is always open); gRPC's default permit is 5 minutes, and a server
   * answers the third early ping with GOAWAY {@code too_many_pings}, which cut every client's
   * keep-alive stream about once every 30 s and made clients fail over in the middle of a
   * leader change. Must stay below every ping interval a Leasehold client uses.
   */
  public static final Duration CLIENT_PING_PERMIT = Duration.ofSeconds(5);

  private final NodeConfig config;
  private final PeerSettings peerSettings;
  /** Null in plaintext. */
  private final NodeTls tls;
  private final SessionKeeper keeper = new SessionKeeper(System::nanoTime);
  private final ClusterClock clusterClock = new ClusterClock(System::nanoTime);
  /** Hands applied events on to the watchers, off the applying thread ({@link WatchHub}). */
  private final ExecutorService watchFanOut;
  private final WatchHub watches;
  private final NodeCounters counters = new NodeCounters();
  /** Completes each time this node becomes a ready leader; replaced once it is observed. */
  private volatile CompletableFuture<Void> leaderReady = new CompletableFuture<>();
  private final CompletableFuture<Void> clusterIdentityApplied = new CompletableFuture<>();
  private final LeaseStateMachine stateMachine;
  private final SessionExpiry sessionExpiry;
  private final ScheduledExecutorService expiry;
  /** Sends watchers their progress reports ({@link WatchHub#reportProgress}). */
  private final ScheduledExecutorService watchProgress;
  /** Set when {@link #close()} begins: from then on Raft's closing is this node's own doing. */
  private volatile boolean closing;
  /** Completes, with why, when Raft stopped this node by itself; see {@link #stoppedOnItsOwn()}. */
  private final CompletableFuture<String> stoppedOnItsOwn = new CompletableFuture<>();
  private RaftServer raftServer;
  private RaftClient raftClient;
  private LeaderClients forwardingClients;
  private RaftClient readClient;
  private LeaderClients readingClients;
  private RaftGateway gateway;
  private LeadershipTransfer leadership;
  private MembershipChanges membership;
  private Server grpcServer;
  /** Caps the client connections; made with {@link #grpcServer}. */
  private ConnectionCap connectionCap;
  /** The client port's event loops, closed after {@link #grpcServer}. */
  private ConnectionCap.EventLoops clientLoops;
  /** The client edge's limit checks (and connection counts); null until the edge is up. */
  private volatile LimitChecks limitChecks;

  private CoreNode(NodeConfig config, PeerSettings peerSettings, NodeTls tls) {
    this.config = config;
    this.peerSettings = peerSettings;
    this.tls = tls;
    this.watchFanOut = Executors.newSingleThreadExecutor(DaemonThreads.named("leasehold-watch-fanout-" + config.self()));
    this.watches = new WatchHub(Limits.WATCH_HISTORY_EVENTS, config.limits().watchHistoryBytes(), watchFanOut);
    this.stateMachine =
        new LeaseStateMachine(
            keeper,
            watches,
            clusterClock,
            () -> {
              counters.leaderships.increment();
              leaderReady.complete(null);
              writeRootIdentity();
            },
            c -> this.gateway.writeLocally(c));
    this.sessionExpiry =
        new SessionExpiry(
            config.self(), keeper, stateMachine.state(), clusterClock, new DivisionLeadership(), c -> gateway.writeLocally(c));
    this.expiry =
        Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leasehold-expiry-" + config.self()));
    this.watchProgress =
        Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leasehold-watch-progress-" + config.self()));
  }

  /**
   * Starts a node: formats its data directory or recovers it, as {@link NodeConfig#startMode()}
   * says, joins the cluster, and serves clients on its client port.
   *
   * <p>Before anything is written it refuses to start (nothing created or changed) when the data
   * directory does not fit the start mode — {@link NodeConfig.StartMode#RECOVER} on a directory
   * that is missing or empty or holds a storage without its metadata; {@link
   * NodeConfig.StartMode#BOOTSTRAP} on one that is not empty — or when another node that answers
   * on its client port runs with another election timeout.
   *
   * @param config the node's configuration
   * @return the running node
   * @throws StartRefusedException if starting would lose data or break the leader lease
   * @throws UncheckedIOException if a port is taken or the data directory is unusable
   */
  public static CoreNode start(NodeConfig config) {
    return start(config, null);
  }

  /**
   * A backup to seed a node of a new cluster with, and how far to move the revision past the
   * backup's (more than the tokens the old cluster may have issued after it was taken).
   *
   * @param backup the checked backup
   * @param bumpRevision at least 0
   */
  public record Restore(Backup backup, long bumpRevision) {
    public Restore {
      Objects.requireNonNull(backup, "backup");
      if (bumpRevision < 0) {
        throw new IllegalArgumentException("bumpRevision must be at least 0; was " + bumpRevision);
      }
    }
  }

  /**
   * Starts a node of a new cluster from a backup: like {@link #start}, with {@link
   * NodeConfig.StartMode#BOOTSTRAP} only (an empty data directory), every node of the new cluster
   * restored from the same file. Sessions in the backup get a full TTL from the first leader's
   * election; revisions, and so fencing tokens, continue above the backup's plus the bump.
   *
   * @throws StartRefusedException without BOOTSTRAP, or if the data directory is not empty
   */
  public static CoreNode startRestoring(NodeConfig config, Restore restore) {
    Objects.requireNonNull(restore, "restore");
    if (config.startMode() != NodeConfig.StartMode.BOOTSTRAP) {
      throw new StartRefusedException(
          "node " + config.self() + " refuses to restore a backup onto a node that has data: --restore needs"
              + " --bootstrap and an empty --data-dir (a backup seeds a new cluster)");
    }
    return start(config, restore);
  }

  private static CoreNode start(NodeConfig config, Restore restore) {
    boolean format = DataDir.checkFormat(config);
    if (!format) {
      DataDir.checkOwner(config);
    }
    // Bad certificate files refuse the start before anything is opened.
    NodeTls tls = config.tls() == null ? null : NodeTls.load(config.tls(), config.self());
    PeerSettings peerSettings = new PeerSettings(config, tls == null ? null : tls.channelCredentials());
    try {
      peerSettings.refuseStartIfAnyDisagrees(START_CHECK_TIMEOUT);
      if (config.startMode() == NodeConfig.StartMode.JOIN) {
        peerSettings.refuseJoinIfStillAMember();
      }
    } catch (RuntimeException e) {
      peerSettings.close();
      closeQuietly(tls);
      throw e;
    }
    CoreNode node = new CoreNode(config, peerSettings, tls);
    if (restore != null) {
      node.stateMachine.restoreOnFirstStart(restore.backup(), restore.bumpRevision());
    }
    try {
      node.startAll(format);
      return node;
    } catch (IOException | RuntimeException e) {
      node.close();
      if (e instanceof IOException io) {
        throw new UncheckedIOException("node " + config.self() + " could not start: " + e.getMessage(), io);
      }
      throw (RuntimeException) e;
    }
  }

  private void startAll(boolean format) throws IOException {
    Peer self = config.selfPeer();
    Files.createDirectories(config.dataDir());
    DataDir.recordOwner(config);
    RaftGroup group = RaftGroup.valueOf(GROUP_ID, raftPeers(config.peers()));
    RaftProperties properties = properties(self);
    // Ratis's server, client and admin traffic: mutual TLS from the node's files, or plaintext.
    // (Ratis's builders default to empty parameters: never hand them null.)
    org.apache.ratis.conf.Parameters parameters =
        tls == null
            ? new org.apache.ratis.conf.Parameters()
            : tls.ratisParameters(config.peers().stream().map(Peer::host).collect(java.util.stream.Collectors.toSet()));
    // Ratis routes a message between nodes by its group only: take none addressed to another node.
    org.apache.ratis.grpc.GrpcConfigKeys.Server.setServicesCustomizer(parameters, new AddresseeCheck(self.id()));
    boolean join = config.startMode() == NodeConfig.StartMode.JOIN;
    raftServer =
        RaftServer.newBuilder()
            .setParameters(parameters)
            .setServerId(RaftPeerId.valueOf(self.id()))
            // A joining node starts with an empty membership: Ratis keeps it "initializing" (no
            // election timer, no vote) until a leader that added it sends it entries.
            .setGroup(join ? RaftGroup.valueOf(GROUP_ID, List.of()) : group)
            .setProperties(properties)
            .setStateMachine(stateMachine)
            // DataDir decided: FORMAT only a new node's empty directory. RECOVER on a storage that
            // DataDir found intact (Ratis would format a missing or empty one by itself).
            .setOption(format ? RaftStorage.StartupOption.FORMAT : RaftStorage.StartupOption.RECOVER)
            .build();
    raftServer.start();
    stateMachine.closed().thenRun(() -> stopsOnItsOwn(RAFT_CLOSED));
    raftClient = forwardingClient(parameters, group, null);
    forwardingClients =
        new LeaderClients(raftServer, GROUP_ID, raftClient, (members, leader) -> forwardingClient(parameters, members, leader));
    // Reads on clients of their own, so that a read held up at a follower holds up no write.
    readClient = forwardingClient(parameters, group, null);
    readingClients =
        new LeaderClients(raftServer, GROUP_ID, readClient, (members, leader) -> forwardingClient(parameters, members, leader));
    gateway = new RaftGateway(raftServer, GROUP_ID, forwardingClients::current, readingClients::current);
    stateMachine.onLeaderServing(gateway::leaderServing);
    membership =
        new MembershipChanges(config, raftServer, GROUP_ID, parameters, tls == null ? null : tls.channelCredentials());
    leadership = new LeadershipTransfer(config, raftServer, GROUP_ID, raftClient, this::members, stateMachine::refuseReadsFor);
    String root = rootIdentityToWrite(format);
    // Fail closed while this node's state may not hold the ACL yet (docs/security.md).
    boolean joined = DataDir.joined(config);
    AccessControl access =
        new AccessControl(
            stateMachine.state(),
            root != null
                ? () -> "this node was bootstrapped with --root-identity and has not applied it yet"
                : joined && tls != null ? peerSettings::accessControlUnknownOrOn : () -> null);
    LimitChecks limits = new LimitChecks(config.limits(), stateMachine.state());
    limitChecks = limits;
    ClientService clientService =
        new ClientService(
            gateway,
            new LeaderRefusals(gateway::leadsHere, stateMachine.state()),
            watches,
            this::nodeStatus,
            counters,
            leadership,
            access,
            config.access().maxSessionsPerIdentity(),
            limits,
            stateMachine.state()::clusterId);
    clientService.serveMembership(membership);
    NettyServerBuilder clientPort = tls == null
        ? NettyServerBuilder.forAddress(self.clientAddress())
        : NettyServerBuilder.forAddress(self.clientAddress(), tls.serverCredentials());
    connectionCap = new ConnectionCap(config.limits().maxConnections(), config.limits().maxConnectionsPerAddress());
    clientLoops = connectionCap.serveOn(clientPort, self.id());
    String shortfall = ConnectionCap.descriptorShortfall(config.limits().maxConnections(), ConnectionCap.descriptorLimit());
    if (shortfall != null) {
      log.warn("node {}: {}", self.id(), shortfall);
    }
    grpcServer =
        clientPort
            // Handlers run on the event loop that read the call: every one of them only checks
            // the request and hands it on (a future, a queue), none blocks, so a hop to gRPC's
            // executor per message would cost a thread wake-up and buy nothing.
            .directExecutor()
            .permitKeepAliveTime(CLIENT_PING_PERMIT.toSeconds(), TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true)
            // Stated, not left to gRPC's default: the largest legal request fits (Limits).
            .maxInboundMessageSize(Limits.MAX_REQUEST_BYTES)
            // A connection keeps what it was given when it was made (its certificate's trust, a
            // watch's right) for as long as it lives: bounded, so a removed CA or a revoked right
            // takes effect on every connection within the age. Clients reconnect on their own.
            .maxConnectionAge(config.limits().maxConnectionAge().toMillis(), TimeUnit.MILLISECONDS)
            .maxConnectionAgeGrace(Limits.CONNECTION_AGE_GRACE_SECONDS, TimeUnit.SECONDS)
            // Half-made connections (a TLS handshake never finished) are closed, not kept.
            .handshakeTimeout(config.limits().handshakeTimeout().toMillis(), TimeUnit.MILLISECONDS)
            .addTransportFilter(limits.transportFilter())
            .addService(
                ServerInterceptors.intercept(
                    clientService, new LeaderHint(this::leaderElsewhere), limits.interceptor(), ClientIdentity.interceptor(),
                    new RetryMark()))
            .build()
            .start();
    // From now on a node found with another election timeout stops this node's reads.
    peerSettings.watch(problem -> stateMachine.refuseReads(problem.orElse(null)));
    expiry.scheduleWithFixedDelay(this::expireSessions, EXPIRY_TICK_MILLIS, EXPIRY_TICK_MILLIS, TimeUnit.MILLISECONDS);
    long progressMillis = WATCH_PROGRESS_INTERVAL.toMillis();
    watchProgress.scheduleWithFixedDelay(watches::reportProgress, progressMillis, progressMillis, TimeUnit.MILLISECONDS);
    rootToWrite = root;
    if (root != null && isLeader()) {
      writeRootIdentity(); // it led before its edge existed
    }
    log.info(
        "node {} serving clients on {} (raft port {}), data in {} ({}; {})",
        self.id(), self.clientEndpoint(), self.raftPort(), config.dataDir(),
        join ? "formatted: a joining node, no member until `leasehold admin add-node " + self + "`"
            : format ? "formatted: a new node" : "recovered",
        tls == null ? "plaintext" : "TLS, client certificates " + config.tls().clientAuth().name().toLowerCase(java.util.Locale.ROOT));
  }

  private RaftProperties properties(Peer self) {
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.GRPC);
    GrpcConfigKeys.Server.setHost(p, self.host());
    GrpcConfigKeys.Server.setPort(p, self.raftPort());
    RaftServerConfigKeys.setStorageDir(p, List.of(config.dataDir().toFile()));
    long min = config.electionTimeout().toMillis();
    RaftServerConfigKeys.Rpc.setTimeoutMin(p, TimeDuration.valueOf(min, TimeUnit.MILLISECONDS));
    // The longest: 1.2 × min (at least min + 50 ms), not Ratis's usual 2 ×. A Ratis follower sleeps
    // a whole new random timeout each time it finds the leader heard from within the last one, so
    // it notices a dead leader only after up to two of them: up to 1.2 s at 300-600 ms, 0.72 s at
    // 300-360 ms. The spread keeps candidates apart (60 ms against a vote round of a few ms; the
    // floor keeps it so at small timeouts on a loaded machine). The leader lease and the pre-vote
    // refusal depend on min alone; a leader that hears no majority for the longest steps down
    // (Ratis's LOST_MAJORITY_HEARTBEATS), as followers would elect another by then anyway.
    // Measured: BENCHMARKS.md, stops 18 (2 × → 1.5 ×) and 22 (→ 1.2 ×).
    RaftServerConfigKeys.Rpc.setTimeoutMax(p, TimeDuration.valueOf(longestElectionTimeoutMs(min), TimeUnit.MILLISECONDS));
    // Linearizable reads: the leader confirms it still leads (ReadIndex) before answering.
    RaftServerConfigKeys.Read.setOption(p, RaftServerConfigKeys.Read.Option.LINEARIZABLE);
    // ...and it confirms that from its leader lease (a majority acknowledged it within 90% of the
    // shortest election timeout, before which no follower may start an election) instead of
    // waiting for the next heartbeat round: without it a read waited up to 160 ms (p90, measured
    // on a 3-node loopback cluster). Bounded clock drift is what every lease here assumes anyway;
    // a new leader still re-arms every session to a full TTL.
    RaftServerConfigKeys.Read.setLeaderLeaseEnabled(p, true);
    // The lease is safe because a follower refuses to pre-vote for another candidate until its
    // own shortest election timeout has passed since it last heard the leader, and the lease ends
    // at 90% of the leader's (Ratis's default ratio; see docs/core.md for the drift this allows).
    // Both hold only with pre-vote on (Ratis's default, set here so that it stays) and with the
    // same election timeout on every node, which PeerSettings checks.
    RaftServerConfigKeys.LeaderElection.setPreVote(p, true);
    RaftServerConfigKeys.Read.setLeaderLeaseTimeoutRatio(p, LEADER_LEASE_RATIO);
    RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(p, true);
    RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(p, config.snapshotEvery());
    RaftServerConfigKeys.Snapshot.setRetentionFileNum(p, 2);
    // Purge the log up to each snapshot, even past a follower that lags: that follower is sent
    // the snapshot instead, so a node that was down long catches up in one transfer.
    RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(p, true);
    RaftServerConfigKeys.Log.setPurgeGap(p, (int) Math.min(config.snapshotEvery(), 1024));
    RaftServerConfigKeys.Log.setSegmentSizeMax(p, SizeInBytes.valueOf(config.logSegmentBytes()));
    tuneLog(p);
    return p;
  }

  /** {@return the longest election timeout, in ms, for the shortest {@code minMs}: see properties()} */
  public static long longestElectionTimeoutMs(long minMs) {
    return Math.max(minMs * 6 / 5, minMs + 50);
  }

  /**
   * Log settings that cost throughput without adding safety. Durability is untouched: every entry
   * is fsynced before it counts towards a commit (never async or unsafe flush).
   */
  private static void tuneLog(RaftProperties p) {
    // The commit index is volatile state in Raft; Ratis would otherwise append (and replicate and
    // fsync) a metadata entry each time it advances, which doubles the log writes under load.
    RaftServerConfigKeys.Log.setLogMetadataEnabled(p, false);
    // A follower would chain every append behind the previous one's future (RATIS-2235).
    RaftServerConfigKeys.Log.setAppendEntriesComposeEnabled(p, false);
  }

  /**
   * {@return a Ratis client of this node's, to forward calls to the leader with}: first to {@code
   * leader} (null: Ratis's choice), then to whichever leader the refusals name
   */
  private RaftClient forwardingClient(org.apache.ratis.conf.Parameters parameters, RaftGroup group, RaftPeerId leader) {
    return RaftClient.newBuilder()
        .setProperties(clientProperties())
        .setParameters(parameters)
        .setRaftGroup(group)
        .setLeaderId(leader)
        .setClientId(ClientId.randomId())
        // Bounded in time, so that deduplication can be (see RaftGateway).
        .setRetryPolicy(RaftGateway.forwardRetryPolicy(this::leaderUp))
        .build();
  }

  private static RaftProperties clientProperties() {
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.GRPC);
    RaftClientConfigKeys.Rpc.setRequestTimeout(
        p, TimeDuration.valueOf(RATIS_REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
    // The gateway never has more outstanding, so the ordered client never blocks its caller.
    // (One more: Ratis's ordered client holds one for the request it sends on its first use.)
    RaftClientConfigKeys.Async.setOutstandingRequestsMax(p, RaftGateway.MAX_FORWARDED + 1);
    return p;
  }

  private static List<RaftPeer> raftPeers(List<Peer> peers) {
    return peers.stream().map(MembershipChanges::raftPeer).toList();
  }

  /** The file that keeps a bootstrap's --root-identity until the log holds it (a crash before). */
  static final String ROOT_IDENTITY_FILE = "root-identity";

  /** The root identity this node must see in the log before it serves anyone; null for none. */
  private volatile String rootToWrite;

  /**
   * {@return the root identity this node writes to the log when it leads, and waits for: the
   * bootstrap's {@code --root-identity}, remembered in the data directory so that a crash before
   * the log held it cannot leave access control off after a restart; null when there is none}
   */
  private String rootIdentityToWrite(boolean format) throws IOException {
    Path file = config.dataDir().resolve(ROOT_IDENTITY_FILE);
    if (format && config.access().rootIdentity() != null) {
      Files.writeString(file, config.access().rootIdentity(), StandardCharsets.UTF_8);
      return config.access().rootIdentity();
    }
    if (Files.exists(file) && !stateMachine.state().acl().enabled()) {
      return Files.readString(file, StandardCharsets.UTF_8).strip();
    }
    return null;
  }

  /**
   * On a ready leader bootstrapped with a root identity: writes it to the log unless the state
   * holds one (the first applied wins, so every bootstrap node may write one).
   */
  private void writeRootIdentity() {
    String root = rootToWrite;
    if (root == null || gateway == null || stateMachine.state().acl().enabled()) {
      return;
    }
    gateway
        .writeLocally(Command.newBuilder().setAclInit(AclInit.newBuilder().setRootIdentity(root)).build())
        .whenComplete(
            (reply, error) -> {
              if (error != null) {
                // It lost the leadership: the next leader writes it.
                log.warn("node {}: could not write the root identity to the log; the next leader will", config.self(), error);
              }
            });
  }

  /**
   * The leader re-arms sessions when it takes over and ends those whose deadline passed, through
   * the log so that every replica does; decisions are stamped with the term in which this node
   * led and are never forwarded (see {@link SessionExpiry}).
   */
  private void expireSessions() {
    try {
      sessionExpiry.tick();
    } catch (RuntimeException e) {
      log.warn("node {}: expiry check failed; will retry", config.self(), e);
    }
    if (!clusterIdentityApplied.isDone() && !stateMachine.state().clusterId().isEmpty()) {
      clusterIdentityApplied.complete(null);
    }
  }

  /**
   * {@return completes once this node has applied its cluster's identity (a moment after the
   * cluster's first election, checked on the expiry tick): before it, the node grants no session}
   */
  CompletableFuture<Void> clusterIdentityApplied() {
    return clusterIdentityApplied;
  }

  /** This node's leadership, as its Raft division reports it. */
  private final class DivisionLeadership implements SessionExpiry.Leadership {
    @Override
    public boolean isReadyLeader() {
      try {
        DivisionInfo info = raftServer.getDivision(GROUP_ID).getInfo();
        return info.isLeader() && info.isLeaderReady();
      } catch (IOException e) {
        return false;
      }
    }

    @Override
    public long currentTerm() {
      try {
        return raftServer.getDivision(GROUP_ID).getInfo().getCurrentTerm();
      } catch (IOException e) {
        return -1; // not in the group: never equal to a term read before
      }
    }
  }

  /** {@return this node's session deadlines, for tests} */
  public LeadershipTransfer leadership() {
    return leadership;
  }

  public LeaseStateMachine stateMachine() {
    return stateMachine;
  }

  public SessionKeeper sessionKeeper() {
    return keeper;
  }

  /** {@return the clients it forwards writes with, for tests} */
  public LeaderClients forwardingClients() {
    return forwardingClients;
  }

  /** {@return the clients it forwards reads with, for tests} */
  public LeaderClients readingClients() {
    return readingClients;
  }

  /** {@return the expiry loop, for tests} */
  public SessionExpiry sessionExpiry() {
    return sessionExpiry;
  }

  /** {@return the leader's client endpoint, or empty when this node leads or knows no leader} */
  private Optional<String> leaderElsewhere() {
    try {
      RaftPeerId leader = raftServer.getDivision(GROUP_ID).getInfo().getLeaderId();
      if (leader == null || leader.toString().equals(config.self())) {
        return Optional.empty();
      }
      String id = leader.toString();
      return members().stream().filter(p -> p.id().equals(id)).map(Peer::clientEndpoint).findFirst();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private NodeStatus nodeStatus() {
    NodeStatus.Builder status =
        NodeStatus.newBuilder()
            .setId(config.self())
            .setAddress(config.selfPeer().clientEndpoint())
            .setElectionTimeoutMs(config.electionTimeout().toMillis())
            .setSettingsMismatch(peerSettings.problem().orElse(""))
            .setAccessControl(stateMachine.state().acl().enabled());
    MembershipChanges m = membership;
    if (m != null) {
      m.members().forEach(p -> status.addMemberIds(p.id()));
    }
    try {
      DivisionInfo info = raftServer.getDivision(GROUP_ID).getInfo();
      return status
          .setRole(info.getCurrentRole().name())
          .setAppliedIndex(info.getLastAppliedIndex())
          .setTerm(info.getCurrentTerm())
          .build();
    } catch (IOException e) {
      return status.setRole("UNKNOWN").build();
    }
  }

  /**
   * {@return what this node knows of itself and its cluster now, from its own replica and Raft
   * division (never through the leader), without the held leases listed (counted only): what
   * {@code /metrics} and {@code /readyz} need, at a cost that does not grow with the leases}
   */
  public NodeSnapshot snapshot() {
    return snapshot(0);
  }

  /**
   * {@return what this node knows of itself and its cluster now, with at most {@code leasesListed}
   * held leases listed (in name order; {@link NodeSnapshot#leasesHeld} counts them all)}: the
   * list is copied under the state's lock, so it is bounded
   *
   * @param leasesListed how many held leases to list, 0 or more
   */
  public NodeSnapshot snapshot(int leasesListed) {
    String role = "UNKNOWN";
    long term = 0;
    String leaderId = "";
    boolean ready = false;
    long commit = -1;
    long applied = -1;
    List<NodeSnapshot.PeerCommit> peers = new java.util.ArrayList<>();
    try {
      RaftServer.Division division = raftServer.getDivision(GROUP_ID);
      DivisionInfo info = division.getInfo();
      role = info.getCurrentRole().name();
      term = info.getCurrentTerm();
      leaderId = info.getLeaderId() == null ? "" : info.getLeaderId().toString();
      ready = info.isLeader() && info.isLeaderReady();
      applied = info.getLastAppliedIndex();
      commit = division.getRaftLog().getLastCommittedIndex();
      java.util.Map<String, Long> known = new java.util.HashMap<>();
      for (org.apache.ratis.proto.RaftProtos.CommitInfoProto c : division.getCommitInfos()) {
        known.put(c.getServer().getId().toStringUtf8(), c.getCommitIndex());
        commit = Math.max(commit, c.getCommitIndex());
      }
      for (Peer p : members()) {
        peers.add(new NodeSnapshot.PeerCommit(p.id(), known.getOrDefault(p.id(), -1L)));
      }
    } catch (IOException | RuntimeException e) {
      // Not (or no longer) in the group: the role says so.
    }
    CoreState state = stateMachine.state();
    io.leasehold.server.state.Counts counts = state.counts();
    boolean leads = ready;
    List<NodeSnapshot.HeldLease> leases =
        leasesListed == 0 ? List.of() : state.heldLeaseList(leasesListed, id -> leads ? keeper.remainingMillis(id) : -1);
    return new NodeSnapshot(
        config.self(),
        config.selfPeer().clientEndpoint(),
        role,
        term,
        leaderId,
        ready,
        commit,
        applied,
        List.copyOf(peers),
        counts.getSessions(),
        counts.getKeys(),
        counts.getHeldLeases(),
        counts.getRevision(),
        leases,
        counters.leaderships.sum(),
        counters.keepAlives.sum(),
        state.leaseExpiries(),
        counters.writes.sum(),
        counters.writeNanos.sum(),
        limitChecks == null ? 0 : limitChecks.connectionsOpen(),
        limitChecks == null ? 0 : limitChecks.connectionsAccepted(),
        connectionCap == null ? 0 : connectionCap.refused(),
        state.quotaBytes(),
        config.limits().maxDataBytes());
  }

  /**
   * {@return the last lease events this node applied (at most {@code max}) that its watch
   * history still holds, oldest first}
   */
  public List<TenureChange> recentTenureChanges(int max) {
    List<TenureChange> recent = new java.util.ArrayList<>();
    for (io.leasehold.core.proto.Event e : watches.recent(CoreState.LEASE_PREFIX, max)) {
      KeyValue kv = e.getKv();
      boolean put = e.getType() == io.leasehold.core.proto.Event.Type.PUT;
      recent.add(
          new TenureChange(
              kv.getModRevision(), put ? "ACQUIRED" : "ENDED", kv.getKey().substring(CoreState.LEASE_PREFIX.length()),
              kv.getValue().toStringUtf8(), kv.getCreateRevision(), put ? "" : e.getCause()));
    }
    return recent;
  }

  /**
   * {@return the cluster's voting members as this node's Raft division knows them now (they
   * change with {@code admin add-node} and {@code remove-node}); {@code --peers} while it knows
   * none (a joining node before it is added)}
   */
  public List<Peer> members() {
    MembershipChanges m = membership;
    List<Peer> now = m == null ? List.of() : m.members();
    return now.isEmpty() ? config.peers() : now;
  }

  /** {@return this node's configuration} */
  public NodeConfig config() {
    return config;
  }

  /** {@return whether this node currently leads the cluster} */
  public boolean isLeader() {
    try {
      return raftServer != null && raftServer.getDivision(GROUP_ID).getInfo().isLeader();
    } catch (IOException e) {
      return false;
    }
  }

  /** {@return whether this node leads and has committed an entry of its term (it serves)} */
  public boolean isLeaderReady() {
    try {
      DivisionInfo info = raftServer.getDivision(GROUP_ID).getInfo();
      return info.isLeader() && info.isLeaderReady();
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * {@return completes the next time this node becomes a ready leader (at once if it has since
   * the last call)}
   */
  CompletableFuture<Void> nextLeaderReady() {
    CompletableFuture<Void> f = leaderReady;
    if (f.isDone()) {
      leaderReady = new CompletableFuture<>();
    }
    return f;
  }

  /** {@return this node's current Raft term; -1 once it has left the group} */
  public long term() {
    return new DivisionLeadership().currentTerm();
  }

  /** {@return the term of the last log entry this node applied; -1 if none} */
  public long appliedTerm() {
    try {
      return LeadershipTransfer.appliedTerm(raftServer.getDivision(GROUP_ID));
    } catch (IOException e) {
      return -1;
    }
  }

  /** {@return the index of the last log entry this node applied} */
  public long appliedIndex() {
    try {
      return raftServer.getDivision(GROUP_ID).getInfo().getLastAppliedIndex();
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * Reads a key from this node's own replica, without asking the leader: possibly stale, for
   * diagnostics and tests of replication. Clients read through {@code Get}, which is linearizable.
   *
   * @param key the key
   * @return the key as this replica has it
   */
  public Optional<KeyValue> localRead(String key) {
    List<KeyValue> kvs = stateMachine.state().get(GetRequest.newBuilder().setKey(key).build()).getKvsList();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
  }

  /** {@return the log index of the last snapshot this node loaded (at start or installed); -1 if none} */
  public long loadedSnapshotIndex() {
    return stateMachine.loadedSnapshotIndex();
  }

  /**
   * Hands the leadership to a follower if this node leads, waiting at most {@code within}: what a
   * planned stop does first, so that clients move to the new leader at once instead of waiting
   * for an election. Leases held meanwhile stay held. A node that does not lead returns at once.
   *
   * @param within how long to wait for the new leader (1 ms to 1 min)
   * @return the node that leads now because of it; empty if this node did not lead, or the move
   *     failed (then the others elect a leader after their election timeout)
   */
  public Optional<String> handOverLeadership(Duration within) {
    return leadership == null ? Optional.empty() : leadership.handOver(within);
  }

  /**
   * Waits, at most {@code within}, until every call this node took has been answered: a planned
   * stop's step after {@link #handOverLeadership}. The calls taken during the move were forwarded
   * to the new leader, which answers them within a round trip or two of being ready; {@link
   * #close()} would cancel them, and each client would send its call again through a node that
   * may not know the leader yet (measured in a failover's logs: 200–570 ms more than answering them here). New
   * calls may still arrive meanwhile (clients learn the new leader from the answers).
   *
   * @return whether every call was answered in time
   */
  public boolean awaitCallsAnswered(Duration within) {
    return gateway == null || gateway.awaitIdle(System.nanoTime() + within.toNanos());
  }

  /**
   * {@return completes, with why, if Ratis closed this node's Raft server by itself, without
   * {@link #close()}: it does so to a node the cluster tells it is no member (removed, or an add
   * that did not complete), after a JVM pause longer than its close threshold, and on an error
   * applying the log. The node then serves nothing more, and the process running it should stop,
   * as a removed etcd member does}
   */
  public CompletableFuture<String> stoppedOnItsOwn() {
    return stoppedOnItsOwn.copy();
  }

  /** {@return this node's Raft division} (for tests that act behind the node's back) */
  public RaftServer.Division division() throws IOException {
    return raftServer.getDivision(GROUP_ID);
  }

  /** {@return whether this node knows a leader that is up (see {@link RaftGateway#leaderUp(org.apache.ratis.server.DivisionInfo, long)})} */
  public boolean leaderUp() {
    return RaftGateway.leaderUp(raftServer, GROUP_ID, RaftGateway.leaderHeardWithinMs(config.electionTimeout()));
  }

  /** Why a node stops when Ratis closed its Raft server by itself. */
  private static final String RAFT_CLOSED =
      "its Raft server stopped by itself, so it serves nothing more. Ratis does this to a node the cluster"
          + " tells it is no member (it was removed, or an add-node of it did not complete: then start a new node"
          + " with --join under a new --id and add it), after a JVM pause longer than its close threshold, and on"
          + " an error applying the log (see the lines above)";

  private void stopsOnItsOwn(String why) {
    if (!closing && stoppedOnItsOwn.complete(why)) {
      log.error("node {}: {}", config.self(), why);
    }
  }

  /**
   * Stops serving and leaves the cluster; the data directory stays for a restart. A leader stops
   * as abruptly as a crash would (the others elect a new one after their election timeout): call
   * {@link #handOverLeadership} first for a planned stop.
   */
  @Override
  public void close() {
    closing = true;
    expiry.shutdownNow();
    watchProgress.shutdownNow();
    watchFanOut.shutdownNow();
    peerSettings.close();
    if (grpcServer != null) {
      stopServingClients();
    }
    closeQuietly(clientLoops);
    closeQuietly(leadership);
    closeQuietly(membership);
    closeQuietly(gateway);
    closeQuietly(forwardingClients);
    closeQuietly(readingClients);
    closeQuietly(raftClient);
    closeQuietly(readClient);
    closeQuietly(raftServer);
    if (stoppedOnItsOwn.isDone()) {
      awaitRaftClosed(); // Ratis's own close is still under way on its thread: let it finish the log
    }
    closeQuietly(tls);
    log.info("node {} stopped", config.self());
  }

  /** How long a node that Ratis stopped by itself waits for Ratis to finish closing its log. */
  private static final Duration RAFT_CLOSE_WAIT = Duration.ofSeconds(5);

  private void awaitRaftClosed() {
    boolean closed = Polling.until(() -> {
      try {
        return division().getInfo().getLifeCycleState() == org.apache.ratis.util.LifeCycle.State.CLOSED;
      } catch (IOException | RuntimeException gone) {
        return true; // no division any more: nothing left to close
      }
    }, System.nanoTime() + RAFT_CLOSE_WAIT.toNanos());
    if (!closed) {
      log.warn("node {}: Ratis had not finished closing {} ms after it began; stopping anyway", config.self(),
          RAFT_CLOSE_WAIT.toMillis());
    }
  }

  /**
   * Cancels the calls in flight and closes every client connection, waiting (at most {@link
   * #CLIENT_CLOSE_WAIT}) until they are closed: then each client has moved to another node before
   * this one spends its CPU and disk on the Raft server's close (a snapshot), instead of finding
   * out only when the process exits and the kernel resets the connection.
   */
  private void stopServingClients() {
    grpcServer.shutdownNow();
    try {
      if (!grpcServer.awaitTermination(CLIENT_CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn("node {}: client connections still open {} ms after closing them; stopping anyway",
            config.self(), CLIENT_CLOSE_WAIT.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception e) {
      log.warn("error while stopping", e);
    }
  }

  @Override
  public String toString() {
    return "CoreNode[" + config.self() + " " + config.selfPeer().clientEndpoint() + "]";
  }
}
