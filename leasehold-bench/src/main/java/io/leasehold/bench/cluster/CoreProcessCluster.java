package io.leasehold.bench.cluster;

import com.google.common.util.concurrent.ListenableFuture;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The consistent core: three JVMs, each {@code java -cp <this JVM's class path>
 * io.leasehold.cli.Main server --id nI --peers ... --data-dir <workDir>/nI} (and {@code
 * --bootstrap} on its first start, which formats the directory), with the server's
 * defaults (Ratis election timeout 300–360 ms, log fsync'd before a write is acknowledged,
 * snapshot every 100,000 entries). Each node serves clients on its port and Raft on the next one.
 * The leader is the node whose {@code Status} RPC reports the role {@code LEADER}.
 */
final class CoreProcessCluster extends ProcessCluster {

  static final int SIZE = 3;

  /** Room for 100,000 leases and their sessions, and the same heap as the ZooKeeper servers. */
  static final String HEAP = Jvm.HEAP;

  /** A node without a leader answers Status after its 1 s attempt to read the counts. */
  private static final long STATUS_DEADLINE_MILLIS = 2_500;

  private final int[] ports;
  private final String peers;
  // Its own lock: status queries must not wait while restart() holds the cluster's.
  private final Object channelLock = new Object();
  private final ManagedChannel[] channels = new ManagedChannel[SIZE];
  private boolean clientsClosed;
  /** Which nodes have been launched: only a node's first start formats its data directory. */
  private final boolean[] launched = new boolean[SIZE];

  private CoreProcessCluster(Path workDir, int[] ports) {
    super("core", workDir, ids(), IntStream.of(ports).mapToObj(p -> "127.0.0.1:" + p).toList());
    this.ports = ports;
    this.peers =
        IntStream.range(0, SIZE).mapToObj(i -> id(i) + "=127.0.0.1:" + ports[i]).collect(Collectors.joining(","));
  }

  /** Starts the nodes and returns once the cluster serves. */
  static CoreProcessCluster start(Path workDir) {
    CoreProcessCluster cluster = new CoreProcessCluster(workDir, FreePorts.take(SIZE, 2));
    cluster.startAll();
    return cluster;
  }

  private static List<String> ids() {
    return IntStream.range(0, SIZE).mapToObj(CoreProcessCluster::id).toList();
  }

  private static String id(int i) {
    return "n" + (i + 1);
  }

  @Override
  List<String> command(int i) {
    // The same Java and JVM options as the ZooKeeper servers (Jvm.serverOptions()), and the AOT
    // cache trained for the core when the launcher made one.
    List<String> command = new ArrayList<>(List.of(Jvm.serverJava()));
    command.addAll(Jvm.serverOptions());
    command.addAll(Jvm.coreAotOptions());
    command.addAll(
        List.of(
            "-cp",
            Jvm.classPath(),
            "io.leasehold.cli.Main",
            "server",
            "--id",
            id(i),
            "--peers",
            peers,
            "--data-dir",
            slot(i).dir.resolve("data").toString()));
    if (!launched[i]) {
      command.add("--bootstrap");
      launched[i] = true;
    }
    return command;
  }

  @Override
  public String backendUri() {
    return "leasehold://" + IntStream.of(ports).mapToObj(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
  }

  @Override
  public String settings() {
    return "3 JVMs (" + HEAP + ", `leasehold server` defaults): Ratis election timeout 300-360 ms"
        + " (randomised), Raft log fsync'd before a write is acknowledged"
        + " (Ratis default: no unsafe or async flush), snapshot every 100,000 entries; renewals are"
        + " kept in the leader's memory, not logged";
  }

  @Override
  boolean healthy(int i) {
    if (!running(i)) {
      return false;
    }
    StatusResponse r = await(ask(i));
    if (r == null || r.getNodesCount() == 0) {
      return false;
    }
    String role = r.getNodes(0).getRole();
    // Counts are a linearizable read through the leader: known only if this node reaches one.
    return r.getCountsKnown() && (role.equals("LEADER") || role.equals("FOLLOWER"));
  }

  @Override
  public Optional<Integer> leader() {
    List<ListenableFuture<StatusResponse>> calls = new ArrayList<>();
    for (int i = 0; i < SIZE; i++) {
      calls.add(running(i) ? ask(i) : null);
    }
    int leader = -1;
    long term = -1;
    for (int i = 0; i < SIZE; i++) {
      StatusResponse r = calls.get(i) == null ? null : await(calls.get(i));
      if (r == null || r.getNodesCount() == 0) {
        continue;
      }
      NodeStatus n = r.getNodes(0);
      // A deposed leader that has not heard of the new term yet still says LEADER: the newer wins.
      if (n.getRole().equals("LEADER") && n.getTerm() > term) {
        leader = i;
        term = n.getTerm();
      }
    }
    return leader < 0 ? Optional.empty() : Optional.of(leader);
  }

  /** The held-lease count of the first node that can read it through a leader. */
  @Override
  public OptionalLong heldLeases() {
    for (int i = 0; i < SIZE; i++) {
      if (!running(i)) {
        continue;
      }
      StatusResponse r = await(ask(i));
      if (r != null && r.getCountsKnown()) {
        return OptionalLong.of(r.getHeldLeases());
      }
    }
    return OptionalLong.empty();
  }

  @Override
  public boolean tellsAppliedIndex() {
    return true;
  }

  @Override
  public OptionalLong appliedIndex(int i) {
    slot(i);
    if (!running(i)) {
      return OptionalLong.empty();
    }
    StatusResponse r = await(ask(i));
    return r == null || r.getNodesCount() == 0 ? OptionalLong.empty() : OptionalLong.of(r.getNodes(0).getAppliedIndex());
  }

  private ListenableFuture<StatusResponse> ask(int i) {
    return LeaseholdGrpc.newFutureStub(channel(i))
        .withDeadlineAfter(STATUS_DEADLINE_MILLIS, TimeUnit.MILLISECONDS)
        .status(StatusRequest.getDefaultInstance());
  }

  private static StatusResponse await(ListenableFuture<StatusResponse> call) {
    try {
      return call.get(STATUS_DEADLINE_MILLIS + 1_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      call.cancel(true);
      return null;
    } catch (ExecutionException | TimeoutException e) {
      call.cancel(true);
      return null;
    }
  }

  private ManagedChannel channel(int i) {
    synchronized (channelLock) {
      if (clientsClosed) {
        throw new IllegalStateException("the core cluster is closed");
      }
      ManagedChannel c = channels[i];
      if (c == null) {
        c = ManagedChannelBuilder.forAddress("127.0.0.1", ports[i]).usePlaintext().build();
        channels[i] = c;
      } else {
        // After a refused connection gRPC waits up to minutes before it tries again; a node that
        // was restarted must be seen at once.
        c.resetConnectBackoff();
      }
      return c;
    }
  }

  @Override
  void closeClients() {
    synchronized (channelLock) {
      clientsClosed = true;
      for (int i = 0; i < SIZE; i++) {
        if (channels[i] != null) {
          channels[i].shutdownNow();
          channels[i] = null;
        }
      }
    }
  }
}
