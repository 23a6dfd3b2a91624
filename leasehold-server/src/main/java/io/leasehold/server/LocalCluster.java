package io.leasehold.server;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

/**
 * Several nodes of the core in this JVM on loopback, each with its own data directory under one
 * root: what {@code leasehold dev} runs, and what the tests use as a real cluster. Nodes can be
 * stopped and started again on their data, one at a time or all together.
 *
 * <p>{@link #start} makes a new cluster (every node formats its empty directory); {@link #recover}
 * starts one kept under a root again, and so do {@link #startNode} and {@link #restartAll}: a node
 * whose directory was lost is refused ({@link StartRefusedException}), never formatted again.
 */
public final class LocalCluster implements AutoCloseable {

  private final List<Peer> peers;
  private final Path root;
  private final UnaryOperator<NodeConfig> tuning;
  private final CoreNode[] nodes;

  private LocalCluster(List<Peer> peers, Path root, UnaryOperator<NodeConfig> tuning) {
    this.peers = peers;
    this.root = root;
    this.tuning = tuning;
    this.nodes = new CoreNode[peers.size()];
  }

  /**
   * Starts a new cluster: {@code size} nodes named n1, n2, ... on loopback, their client ports
   * {@code basePort}, {@code basePort + 2}, ... (each Raft port is the one after), each formatting
   * its directory {@code root/n1}, ... ({@link NodeConfig.StartMode#BOOTSTRAP}).
   *
   * @param size how many nodes (1 to 9)
   * @param basePort the first client port; 0 picks free ports
   * @param root where the nodes keep their data, one directory each, missing or empty
   * @param tuning adjusts each node's configuration (election timeout, snapshots)
   * @return the running cluster
   * @throws StartRefusedException if a node's directory holds data
   */
  public static LocalCluster start(int size, int basePort, Path root, UnaryOperator<NodeConfig> tuning) {
    return launch(size, basePort, root, tuning, NodeConfig.StartMode.BOOTSTRAP);
  }

  /**
   * Starts a cluster that {@link #start} made under {@code root} again, on the nodes' data
   * ({@link NodeConfig.StartMode#RECOVER}), with the same size and ports.
   *
   * @param size how many nodes (1 to 9)
   * @param basePort the first client port, as at the start; 0 picks free ports
   * @param root where the nodes keep their data
   * @param tuning adjusts each node's configuration (election timeout, snapshots)
   * @return the running cluster
   * @throws StartRefusedException if a node's directory is missing, empty or damaged
   */
  public static LocalCluster recover(int size, int basePort, Path root, UnaryOperator<NodeConfig> tuning) {
    return launch(size, basePort, root, tuning, NodeConfig.StartMode.RECOVER);
  }

  private static LocalCluster launch(
      int size, int basePort, Path root, UnaryOperator<NodeConfig> tuning, NodeConfig.StartMode mode) {
    if (size < 1 || size > 9) {
      throw new IllegalArgumentException("nodes must be between 1 and 9; was " + size);
    }
    String host = InetAddress.getLoopbackAddress().getHostAddress();
    List<Peer> peers = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      int port = basePort == 0 ? freePortPair() : basePort + 2 * i;
      peers.add(new Peer("n" + (i + 1), host, port));
    }
    LocalCluster cluster = new LocalCluster(List.copyOf(peers), root, tuning);
    try {
      for (int i = 0; i < size; i++) {
        cluster.startNode(i, mode);
      }
      cluster.awaitLeader(Duration.ofSeconds(30));
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  /**
   * Waits until one running node leads and has committed an entry of its term, so the cluster
   * serves reads and writes.
   *
   * @param atMost how long to wait
   * @return the leader's position
   * @throws IllegalStateException if no leader is ready in time
   */
  public int awaitLeader(Duration atMost) {
    long deadline = System.nanoTime() + atMost.toNanos();
    while (true) {
      List<CompletableFuture<Void>> signals = new ArrayList<>();
      synchronized (this) {
        for (int i = 0; i < nodes.length; i++) {
          if (nodes[i] != null) {
            signals.add(nodes[i].nextLeaderReady());
            if (nodes[i].isLeaderReady()) {
              // It grants sessions once it has applied the cluster's identity (its first entry).
              CompletableFuture<Void> identity = nodes[i].clusterIdentityApplied();
              if (identity.isDone()) {
                return i;
              }
              signals.add(identity);
            }
          }
        }
      }
      long left = deadline - System.nanoTime();
      try {
        // Wakes when some node becomes a ready leader, or a ready one applied the identity; then
        // checks which one still is.
        CompletableFuture.anyOf(signals.toArray(CompletableFuture[]::new)).get(Math.max(left, 0), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        throw new IllegalStateException("no leader was elected within " + atMost.toMillis() + " ms", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for a leader", e);
      } catch (ExecutionException e) {
        throw new IllegalStateException("waiting for a leader failed", e);
      }
    }
  }

  /** {@return the URI a client opens to reach this cluster} */
  public String uri() {
    return "leasehold://" + peers.stream().map(Peer::clientEndpoint).collect(Collectors.joining(","));
  }

  /** {@return the nodes as configured, in order} */
  public List<Peer> peers() {
    return peers;
  }

  /** {@return where the nodes keep their data} */
  public Path root() {
    return root;
  }

  /**
   * Starts node {@code i} again on its data directory.
   *
   * @param i the node's position, from 0
   * @return the running node
   * @throws StartRefusedException if its directory is missing, empty or damaged
   */
  public CoreNode startNode(int i) {
    return startNode(i, NodeConfig.StartMode.RECOVER);
  }

  private synchronized CoreNode startNode(int i, NodeConfig.StartMode mode) {
    if (nodes[i] != null) {
      throw new IllegalStateException("node " + peers.get(i).id() + " is already running");
    }
    Peer peer = peers.get(i);
    // The mode last: tuning adjusts settings, it does not decide whether a directory is formatted.
    nodes[i] =
        CoreNode.start(tuning.apply(NodeConfig.of(peer.id(), peers, root.resolve(peer.id()))).withStartMode(mode));
    return nodes[i];
  }

  /**
   * Stops node {@code i}; its data stays.
   *
   * @param i the node's position, from 0
   */
  public synchronized void stopNode(int i) {
    if (nodes[i] != null) {
      nodes[i].close();
      nodes[i] = null;
    }
  }

  /** {@return node {@code i} if it runs} */
  public synchronized Optional<CoreNode> node(int i) {
    return Optional.ofNullable(nodes[i]);
  }

  /**
   * Stops every node, then starts them all again on their data, as after a power cut.
   *
   * @return the position of the new leader
   */
  public int restartAll() {
    close();
    for (int i = 0; i < nodes.length; i++) {
      startNode(i);
    }
    return awaitLeader(Duration.ofSeconds(30));
  }

  /** {@return the position of the current leader among running nodes, if one leads} */
  public synchronized Optional<Integer> leader() {
    for (int i = 0; i < nodes.length; i++) {
      if (nodes[i] != null && nodes[i].isLeader()) {
        return Optional.of(i);
      }
    }
    return Optional.empty();
  }

  /** {@return the election timeout the nodes run with} */
  public Duration electionTimeout() {
    return tuning.apply(NodeConfig.of(peers.get(0).id(), peers, root)).electionTimeout();
  }

  /**
   * Stops every node; the data stays. The leader goes first, so no follower is sent entries while
   * it shuts down; the followers then stop together, before their election timeout runs out.
   */
  @Override
  public synchronized void close() {
    for (int i = 0; i < nodes.length; i++) {
      if (nodes[i] != null && nodes[i].isLeader()) {
        stopNode(i);
      }
    }
    List<Thread> stopping = new ArrayList<>();
    for (int i = 0; i < nodes.length; i++) {
      CoreNode node = nodes[i];
      nodes[i] = null;
      if (node != null) {
        Thread t = new Thread(node::close, "stop-" + node.config().self());
        t.start();
        stopping.add(t);
      }
    }
    for (Thread t : stopping) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** First port handed out by {@link #freePortPair()}: below Linux's default ephemeral range. */
  private static final int FIRST_FREE_PORT = 20_000;
  /** Ports from {@link #FIRST_FREE_PORT}: up to 32,699, below 32,768 where ephemeral ports start (even). */
  private static final int FREE_PORTS = 12_700;
  private static final AtomicInteger NEXT_FREE_PORT =
      new AtomicInteger(ThreadLocalRandom.current().nextInt(FREE_PORTS / 2) * 2);

  /**
   * {@return a loopback port, free now, whose next port is free too} (a node's client and Raft
   * ports). Taken below the ephemeral range (32768–60999 on Linux) and never twice in this JVM: a
   * port the kernel picked for {@code bind(0)} and that was then closed is an ephemeral port, which
   * this JVM's next outgoing connection may take as its local port before the node binds it — and
   * Ratis ends the whole JVM when it cannot bind its port (a test run lost its JVM so).
   */
  public static int freePortPair() {
    for (int attempt = 0; attempt < FREE_PORTS / 2; attempt++) {
      // An even offset in an even-sized range: pairs never overlap, and port + 1 stays in range.
      int port = FIRST_FREE_PORT + Math.floorMod(NEXT_FREE_PORT.getAndAdd(2), FREE_PORTS);
      try (ServerSocket client = new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
          ServerSocket raft = new ServerSocket(port + 1, 1, InetAddress.getLoopbackAddress())) {
        if (client.isBound() && raft.isBound()) {
          return port;
        }
      } catch (IOException taken) {
        // in use: the next pair
      }
    }
    throw new IllegalStateException(
        "found no two adjacent free ports on loopback between " + FIRST_FREE_PORT + " and "
            + (FIRST_FREE_PORT + FREE_PORTS - 1));
  }
}
