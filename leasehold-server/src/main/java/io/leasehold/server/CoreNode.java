package io.leasehold.server;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
import org.apache.ratis.retry.RetryPolicies;
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
  static final RaftGroupId GROUP_ID =
      RaftGroupId.valueOf(UUID.nameUUIDFromBytes("leasehold-core".getBytes(StandardCharsets.UTF_8)));

  private static final long EXPIRY_TICK_MILLIS = 20;

  /** How long one request inside Ratis may take before it is failed (and retried by the caller). */
  static final Duration RATIS_REQUEST_TIMEOUT = Duration.ofSeconds(3);

  private final NodeConfig config;
  private final SessionKeeper keeper = new SessionKeeper(System::nanoTime);
  private final WatchHub watches = new WatchHub(100_000);
  /** Completes each time this node becomes a ready leader; replaced once it is observed. */
  private volatile CompletableFuture<Void> leaderReady = new CompletableFuture<>();
  private final LeaseStateMachine stateMachine =
      new LeaseStateMachine(keeper, watches, () -> leaderReady.complete(null));
  private final Set<Long> expiring = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService expiry;
  private RaftServer raftServer;
  private RaftClient raftClient;
  private RaftGateway gateway;
  private Server grpcServer;

  private CoreNode(NodeConfig config) {
    this.config = config;
    this.expiry =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "leasehold-expiry-" + config.self());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Starts a node: recovers its data directory (or creates it), joins the cluster, and serves
   * clients on its client port.
   *
   * @param config the node's configuration
   * @return the running node
   * @throws UncheckedIOException if a port is taken or the data directory is unusable
   */
  public static CoreNode start(NodeConfig config) {
    CoreNode node = new CoreNode(config);
    try {
      node.startAll();
      return node;
    } catch (IOException | RuntimeException e) {
      node.close();
      if (e instanceof IOException io) {
        throw new UncheckedIOException("node " + config.self() + " could not start: " + e.getMessage(), io);
      }
      throw (RuntimeException) e;
    }
  }

  private void startAll() throws IOException {
    Peer self = config.selfPeer();
    Files.createDirectories(config.dataDir());
    RaftGroup group = RaftGroup.valueOf(GROUP_ID, raftPeers(config.peers()));
    RaftProperties properties = properties(self);
    boolean existing = Files.isDirectory(config.dataDir().resolve(GROUP_ID.getUuid().toString()));
    raftServer =
        RaftServer.newBuilder()
            .setServerId(RaftPeerId.valueOf(self.id()))
            .setGroup(group)
            .setProperties(properties)
            .setStateMachine(stateMachine)
            // Format only a new directory; never wipe an existing one.
            .setOption(existing ? RaftStorage.StartupOption.RECOVER : RaftStorage.StartupOption.FORMAT)
            .build();
    raftServer.start();
    raftClient =
        RaftClient.newBuilder()
            .setProperties(clientProperties())
            .setRaftGroup(group)
            .setClientId(ClientId.randomId())
            // Ratis's default retries forever without sleeping; a client call has a deadline anyway.
            .setRetryPolicy(
                RetryPolicies.retryUpToMaximumCountWithFixedSleep(
                    30, TimeDuration.valueOf(100, TimeUnit.MILLISECONDS)))
            .build();
    gateway = new RaftGateway(raftServer, GROUP_ID, raftClient);
    grpcServer =
        NettyServerBuilder.forAddress(self.clientAddress())
            .addService(
                ServerInterceptors.intercept(
                    new ClientService(gateway, watches, this::nodeStatus), new LeaderHint(this::leaderElsewhere)))
            .build()
            .start();
    expiry.scheduleWithFixedDelay(this::expireSessions, EXPIRY_TICK_MILLIS, EXPIRY_TICK_MILLIS, TimeUnit.MILLISECONDS);
    log.info(
        "node {} serving clients on {} (raft port {}), data in {} ({})",
        self.id(), self.clientEndpoint(), self.raftPort(), config.dataDir(), existing ? "recovered" : "new");
  }

  private RaftProperties properties(Peer self) {
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.GRPC);
    GrpcConfigKeys.Server.setHost(p, self.host());
    GrpcConfigKeys.Server.setPort(p, self.raftPort());
    RaftServerConfigKeys.setStorageDir(p, List.of(config.dataDir().toFile()));
    long min = config.electionTimeout().toMillis();
    RaftServerConfigKeys.Rpc.setTimeoutMin(p, TimeDuration.valueOf(min, TimeUnit.MILLISECONDS));
    RaftServerConfigKeys.Rpc.setTimeoutMax(p, TimeDuration.valueOf(2 * min, TimeUnit.MILLISECONDS));
    // Linearizable reads: the leader confirms it still leads (ReadIndex) before answering.
    RaftServerConfigKeys.Read.setOption(p, RaftServerConfigKeys.Read.Option.LINEARIZABLE);
    // ...and it confirms that from its leader lease (a majority acknowledged it within 90% of the
    // shortest election timeout, before which no follower may start an election) instead of
    // waiting for the next heartbeat round: without it a read waited up to 160 ms (p90, measured
    // on a 3-node loopback cluster). Bounded clock drift is what every lease here assumes anyway;
    // a new leader still re-arms every session to a full TTL.
    RaftServerConfigKeys.Read.setLeaderLeaseEnabled(p, true);
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

  private static RaftProperties clientProperties() {
    RaftProperties p = new RaftProperties();
    RaftConfigKeys.Rpc.setType(p, SupportedRpcType.GRPC);
    RaftClientConfigKeys.Rpc.setRequestTimeout(
        p, TimeDuration.valueOf(RATIS_REQUEST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
    // The gateway never has more outstanding, so the ordered client never blocks its caller.
    RaftClientConfigKeys.Async.setOutstandingRequestsMax(p, RaftGateway.MAX_FORWARDED);
    return p;
  }

  private static List<RaftPeer> raftPeers(List<Peer> peers) {
    return peers.stream()
        .map(
            p ->
                RaftPeer.newBuilder()
                    .setId(p.id())
                    // Ratis's own client protocol shares the Raft port; ours is on clientPort.
                    .setAddress(p.host() + ":" + p.raftPort())
                    .build())
        .toList();
  }

  /** The leader ends sessions whose deadline passed, through the log so that every replica does. */
  private void expireSessions() {
    try {
      DivisionInfo info = raftServer.getDivision(GROUP_ID).getInfo();
      if (!info.isLeader() || !info.isLeaderReady()) {
        return;
      }
      for (long sessionId : keeper.expired()) {
        if (!expiring.add(sessionId)) {
          continue; // already on its way through the log
        }
        log.info("node {}: session {} expired; deleting it and its keys", config.self(), sessionId);
        Command expire =
            Command.newBuilder()
                .setExpire(Expire.newBuilder().setSessionId(sessionId).setTerm(info.getCurrentTerm()))
                .build();
        gateway.write(expire).whenComplete((reply, error) -> {
          expiring.remove(sessionId);
          if (error != null) {
            log.warn("node {}: expiring session {} did not commit (will retry): {}", config.self(), sessionId, error.toString());
          }
        });
      }
    } catch (IOException | RuntimeException e) {
      log.warn("node {}: expiry check failed; will retry", config.self(), e);
    }
  }

  /** {@return the leader's client endpoint, or empty when this node leads or knows no leader} */
  private Optional<String> leaderElsewhere() {
    try {
      RaftPeerId leader = raftServer.getDivision(GROUP_ID).getInfo().getLeaderId();
      if (leader == null || leader.toString().equals(config.self())) {
        return Optional.empty();
      }
      String id = leader.toString();
      return config.peers().stream().filter(p -> p.id().equals(id)).map(Peer::clientEndpoint).findFirst();
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private NodeStatus nodeStatus() {
    NodeStatus.Builder status = NodeStatus.newBuilder().setId(config.self()).setAddress(config.selfPeer().clientEndpoint());
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

  /** Stops serving and leaves the cluster; the data directory stays for a restart. */
  @Override
  public void close() {
    expiry.shutdownNow();
    if (grpcServer != null) {
      grpcServer.shutdownNow();
    }
    closeQuietly(gateway);
    closeQuietly(raftClient);
    closeQuietly(raftServer);
    log.info("node {} stopped", config.self());
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
