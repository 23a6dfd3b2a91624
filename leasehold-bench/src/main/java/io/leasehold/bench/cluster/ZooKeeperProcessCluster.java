package io.leasehold.bench.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * ZooKeeper: three JVMs, each {@code java -cp <this JVM's class path>
 * org.apache.zookeeper.server.quorum.QuorumPeerMain <workDir>/I/zoo.cfg}, the ZooKeeper server
 * that Curator's client brings (3.9). Settings are those of ZooKeeper's sample configuration:
 * {@code tickTime=2000}, {@code initLimit=10}, {@code syncLimit=5}, every transaction fsync'd
 * before it is acknowledged ({@code forceSync=yes}, the default, written out). The AdminServer is off
 * (it would take port 8080) and the four-letter words {@code srvr} and {@code ruok} are on: the
 * leader is the server whose {@code srvr} says {@code Mode: leader}.
 *
 * <p>The backend URI asks for a {@value #SESSION_TIMEOUT} session (the servers allow up to 20
 * ticks, 40 s): leases with TTLs up to 30 s fit in it, and for TTLs up to 20 s the session outlasts
 * the TTL by more than {@code syncLimit × tickTime} (10 s), which docs/zookeeper.md asks of an
 * ensemble so that a follower cut off from the leader cannot let a holder's session outlive its
 * safe window.
 */
final class ZooKeeperProcessCluster extends ProcessCluster {

  static final int SIZE = 3;

  /** The same heap as the core nodes. */
  static final String HEAP = Jvm.HEAP;

  static final String SESSION_TIMEOUT = "30s";

  static final Duration TICK = Duration.ofMillis(2000);
  static final int INIT_LIMIT = 10;
  static final int SYNC_LIMIT = 5;

  private static final String MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

  private final int[] clientPorts;
  private final int[] quorumPorts;
  private final int[] electionPorts;
  private volatile String version;

  private ZooKeeperProcessCluster(Path workDir, int[] ports) {
    super(
        "zookeeper",
        workDir,
        IntStream.range(0, SIZE).mapToObj(ZooKeeperProcessCluster::myid).toList(),
        IntStream.range(0, SIZE).mapToObj(i -> "127.0.0.1:" + ports[i]).toList());
    clientPorts = new int[SIZE];
    quorumPorts = new int[SIZE];
    electionPorts = new int[SIZE];
    for (int i = 0; i < SIZE; i++) {
      clientPorts[i] = ports[i];
      quorumPorts[i] = ports[SIZE + i];
      electionPorts[i] = ports[2 * SIZE + i];
    }
  }

  /** Starts the servers and returns once the ensemble serves. */
  static ZooKeeperProcessCluster start(Path workDir) {
    ZooKeeperProcessCluster cluster = new ZooKeeperProcessCluster(workDir, FreePorts.take(3 * SIZE));
    cluster.startAll();
    return cluster;
  }

  private static String myid(int i) {
    return Integer.toString(i + 1);
  }

  private Path config(int i) {
    return slot(i).dir.resolve("zoo.cfg");
  }

  @Override
  void prepare(int i) throws IOException {
    Path data = slot(i).dir.resolve("data");
    Files.createDirectories(data);
    Files.writeString(data.resolve("myid"), myid(i) + "\n", StandardCharsets.US_ASCII);
    String servers =
        IntStream.range(0, SIZE)
            .mapToObj(k -> "server." + myid(k) + "=127.0.0.1:" + quorumPorts[k] + ":" + electionPorts[k])
            .collect(Collectors.joining("\n"));
    Files.writeString(
        config(i),
        "# Server " + myid(i) + " of a ZooKeeper ensemble that leasehold-bench started.\n"
            + "tickTime=" + TICK.toMillis() + "\n"
            + "initLimit=" + INIT_LIMIT + "\n"
            + "syncLimit=" + SYNC_LIMIT + "\n"
            + "dataDir=" + data + "\n"
            + "# The default, written out: every transaction is fsync'd before it is acknowledged.\n"
            + "forceSync=yes\n"
            + "clientPort=" + clientPorts[i] + "\n"
            + "clientPortAddress=127.0.0.1\n"
            + servers + "\n"
            + "# Off: it would listen on port 8080 in every server.\n"
            + "admin.enableServer=false\n"
            + "# srvr tells the leader from the followers; mntr counts the ephemeral nodes (held leases).\n"
            + "4lw.commands.whitelist=srvr,ruok,mntr,dump\n",
        StandardCharsets.UTF_8);
  }

  @Override
  List<String> command(int i) {
    // The same JVM options as the core's nodes (Jvm.serverOptions()).
    List<String> command = new ArrayList<>(List.of(Jvm.serverJava()));
    command.addAll(Jvm.serverOptions());
    command.addAll(List.of("-cp", Jvm.classPath(), MAIN, config(i).toString()));
    return command;
  }

  @Override
  public String backendUri() {
    return "zookeeper://"
        + IntStream.of(clientPorts).mapToObj(p -> "127.0.0.1:" + p).collect(Collectors.joining(","))
        + "?sessionTimeout=" + SESSION_TIMEOUT;
  }

  @Override
  public String settings() {
    return "3 JVMs (" + HEAP + ") of ZooKeeper " + version() + ": tickTime " + TICK.toMillis() + " ms,"
        + " initLimit " + INIT_LIMIT + ", syncLimit " + SYNC_LIMIT + " ticks, every transaction fsync'd"
        + " (forceSync=yes, the default); client session timeout " + SESSION_TIMEOUT
        + " (the servers allow 4-40 s)";
  }

  /** {@return the version the servers report ("Zookeeper version: 3.9.3-…, built on …"), asked once} */
  private String version() {
    String v = version;
    if (v == null) {
      for (int i = 0; i < SIZE && v == null; i++) {
        v = srvr(i).flatMap(reply -> field(reply, "Zookeeper version")).map(s -> s.split("[-, ]", 2)[0]).orElse(null);
      }
      if (v == null) {
        return "3.9";
      }
      version = v;
    }
    return v;
  }

  @Override
  boolean healthy(int i) {
    Optional<String> mode = mode(i);
    return mode.isPresent() && (mode.get().equals("leader") || mode.get().equals("follower"));
  }

  @Override
  public Optional<Integer> leader() {
    int leader = -1;
    long zxid = -1;
    for (int i = 0; i < SIZE; i++) {
      Optional<String> srvr = srvr(i);
      if (srvr.isEmpty() || !"leader".equals(field(srvr.get(), "Mode").orElse(null))) {
        continue;
      }
      // A leader that lost its quorum says so within syncLimit ticks; until then the newer epoch
      // (the high half of the zxid) wins.
      long z = field(srvr.get(), "Zxid").map(ZooKeeperProcessCluster::hex).orElse(0L);
      if (z > zxid) {
        leader = i;
        zxid = z;
      }
    }
    return leader < 0 ? Optional.empty() : Optional.of(leader);
  }

  /**
   * The holder nodes in the leader's {@code dump} of ephemeral nodes: every held lease is one
   * ephemeral holder node, owned by its holder's session and deleted with it (docs/zookeeper.md).
   * The leader's, since it applies a session's expiry first.
   */
  @Override
  public OptionalLong heldLeases() {
    for (int i = 0; i < SIZE; i++) {
      if (!running(i)) {
        continue;
      }
      Optional<String> mntr = Loopback.exchange(clientPorts[i], "mntr");
      if (mntr.isEmpty() || !"leader".equals(tabField(mntr.get(), "zk_server_state").orElse(null))) {
        continue;
      }
      // The leader's dump lists every session's ephemeral nodes; a held lease is one holder
      // node (the backend's per-session marker nodes are ephemeral too, and are not leases).
      Optional<String> dump = Loopback.exchange(clientPorts[i], "dump");
      if (dump.isPresent()) {
        return OptionalLong.of(dump.get().lines().map(String::strip)
            .filter(l -> l.startsWith("/") && l.contains("/leases/") && l.endsWith("/holder"))
            .count());
      }
    }
    return OptionalLong.empty();
  }

  private static Optional<String> tabField(String reply, String name) {
    String prefix = name + "\t";
    return reply.lines().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length()).strip()).findFirst();
  }

  /** {@return what {@code srvr} says of server {@code i}'s role: leader, follower, or empty} */
  private Optional<String> mode(int i) {
    return srvr(i).flatMap(reply -> field(reply, "Mode"));
  }

  private Optional<String> srvr(int i) {
    if (!running(i)) {
      return Optional.empty();
    }
    return Loopback.exchange(clientPorts[i], "srvr");
  }

  private static Optional<String> field(String reply, String name) {
    String prefix = name + ": ";
    return reply.lines().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length()).strip()).findFirst();
  }

  private static long hex(String value) {
    try {
      return Long.parseUnsignedLong(value.startsWith("0x") ? value.substring(2) : value, 16);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
