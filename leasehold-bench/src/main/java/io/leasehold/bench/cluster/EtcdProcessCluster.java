package io.leasehold.bench.cluster;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Base64;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * etcd: three members of Debian's {@code etcd} binary (package {@code etcd-server}, 3.4) on
 * loopback, with etcd's defaults: heartbeat 100 ms, election timeout 1 s, the write-ahead log
 * fsync'd before a write is acknowledged, snapshot every 100,000 entries, 2 GiB backend quota, no
 * auto-compaction. The leader is the member whose {@code /v3/maintenance/status} names itself as
 * leader.
 */
final class EtcdProcessCluster extends ProcessCluster {

  static final int SIZE = 3;

  static final String INSTALL_HINT =
      "the etcd binary was not found (looked on PATH and in /usr/bin): install the Debian package"
          + " with 'sudo apt-get install -y etcd-server' (./run-tests does this when it can)";

  // The status reply spells 64-bit ids and terms as decimal strings (grpc-gateway's JSON).
  private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\"\\s*:\\s*\"(\\d+)\"");
  private static final Pattern LEADER = Pattern.compile("\"leader\"\\s*:\\s*\"(\\d+)\"");
  private static final Pattern SERVER_VERSION = Pattern.compile("\"etcdserver\"\\s*:\\s*\"([^\"]+)\"");
  private static final Pattern RAFT_TERM = Pattern.compile("\"raftTerm\"\\s*:\\s*\"(\\d+)\"");
  private static final Pattern COUNT = Pattern.compile("\"count\"\\s*:\\s*\"?(\\d+)");
  private static final Pattern HEADER = Pattern.compile("\"header\"\\s*:");

  /** Where the etcd backend keeps its leases with the default namespace (docs/etcd.md). */
  static final String LEASE_KEYS = "/leasehold/leases/";

  private final String binary;
  private final int[] clientPorts;
  private final int[] peerPorts;
  private final String initialCluster;
  private final String token;
  private volatile String version;

  private EtcdProcessCluster(Path workDir, String binary, int[] ports) {
    super(
        "etcd",
        workDir,
        IntStream.range(0, SIZE).mapToObj(EtcdProcessCluster::name).toList(),
        IntStream.range(0, SIZE).mapToObj(i -> "127.0.0.1:" + ports[i]).toList());
    this.binary = binary;
    this.clientPorts = new int[SIZE];
    this.peerPorts = new int[SIZE];
    for (int i = 0; i < SIZE; i++) {
      clientPorts[i] = ports[i];
      peerPorts[i] = ports[SIZE + i];
    }
    this.initialCluster =
        IntStream.range(0, SIZE).mapToObj(i -> name(i) + "=" + peerUrl(i)).collect(Collectors.joining(","));
    // A fresh token per cluster: members of another test's cluster on this machine never talk to ours.
    this.token = "leasehold-bench-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Starts the members and returns once the cluster serves. */
  static EtcdProcessCluster start(Path workDir) {
    String binary = binary();
    EtcdProcessCluster cluster = new EtcdProcessCluster(workDir, binary, FreePorts.take(2 * SIZE));
    cluster.startAll();
    return cluster;
  }

  /** {@return the etcd binary: the first on PATH, else /usr/bin/etcd} */
  static String binary() {
    List<Path> candidates = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(File.pathSeparator)) {
        if (!dir.isEmpty()) {
          candidates.add(Path.of(dir, "etcd"));
        }
      }
    }
    candidates.add(Path.of("/usr/bin/etcd"));
    return candidates.stream()
        .filter(Files::isExecutable)
        .findFirst()
        .map(Path::toString)
        .orElseThrow(() -> new IllegalStateException(INSTALL_HINT));
  }

  private static String name(int i) {
    return "m" + (i + 1);
  }

  private String peerUrl(int i) {
    return "http://127.0.0.1:" + peerPorts[i];
  }

  @Override
  List<String> command(int i) {
    String clientUrl = "http://127.0.0.1:" + clientPorts[i];
    // The same command restarts a member: with a data directory that holds a member, etcd
    // ignores the --initial-cluster* flags and recovers.
    return List.of(
        binary,
        "--name=" + name(i),
        "--data-dir=" + slot(i).dir.resolve("data"),
        "--listen-client-urls=" + clientUrl,
        "--advertise-client-urls=" + clientUrl,
        "--listen-peer-urls=" + peerUrl(i),
        "--initial-advertise-peer-urls=" + peerUrl(i),
        "--initial-cluster=" + initialCluster,
        "--initial-cluster-state=new",
        "--initial-cluster-token=" + token,
        "--logger=zap",
        "--log-outputs=stderr");
  }

  @Override
  public String backendUri() {
    return "etcd://" + IntStream.of(clientPorts).mapToObj(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
  }

  @Override
  public String settings() {
    return "3 members of etcd " + version() + " with its defaults: heartbeat 100 ms, election"
        + " timeout 1000 ms, write-ahead log fsync'd before a write is acknowledged (bbolt backend"
        + " committed in batches), snapshot every 100,000 entries, 2 GiB backend quota, no"
        + " auto-compaction";
  }

  /** {@return the version the members report, asked once} */
  private String version() {
    String v = version;
    if (v == null) {
      for (int i = 0; i < SIZE && v == null; i++) {
        v = Loopback.http(clientPorts[i], "GET", "/version", null).map(body -> find(SERVER_VERSION, body)).orElse(null);
      }
      if (v == null) {
        return "3.4";
      }
      version = v;
    }
    return v;
  }

  /**
   * {@code /health} is true when the member has a leader and a read through it succeeds, so a
   * restarted member that has not rejoined answers false.
   */
  @Override
  boolean healthy(int i) {
    return running(i)
        && Loopback.http(clientPorts[i], "GET", "/health", null)
            .filter(body -> body.replace(" ", "").contains("\"health\":\"true\""))
            .isPresent();
  }

  @Override
  public Optional<Integer> leader() {
    int leader = -1;
    long term = -1;
    for (int i = 0; i < SIZE; i++) {
      if (!running(i)) {
        continue;
      }
      Optional<String> status = Loopback.http(clientPorts[i], "POST", "/v3/maintenance/status", "{}");
      if (status.isEmpty()) {
        continue;
      }
      String self = find(MEMBER_ID, status.get());
      String leaderId = find(LEADER, status.get());
      String raftTerm = find(RAFT_TERM, status.get());
      // A deposed leader that has not heard of the new term yet still names itself: the newer wins.
      if (self != null && self.equals(leaderId)) {
        long t = raftTerm == null ? 0 : Long.parseUnsignedLong(raftTerm);
        if (t > term) {
          leader = i;
          term = t;
        }
      }
    }
    return leader < 0 ? Optional.empty() : Optional.of(leader);
  }

  /**
   * A count-only range over the lease keys of the default namespace ({@code /leasehold/leases/}),
   * through the first member that answers: a linearizable read that returns no keys. Every lease
   * key hangs on an etcd lease, so it is gone once its session expired.
   */
  @Override
  public OptionalLong heldLeases() {
    String from = LEASE_KEYS;
    String to = LEASE_KEYS.substring(0, LEASE_KEYS.length() - 1) + (char) (LEASE_KEYS.charAt(LEASE_KEYS.length() - 1) + 1);
    String body = "{\"key\":\"" + base64(from) + "\",\"range_end\":\"" + base64(to) + "\",\"count_only\":true}";
    for (int i = 0; i < SIZE; i++) {
      if (!running(i)) {
        continue;
      }
      Optional<String> reply = Loopback.http(clientPorts[i], "POST", "/v3/kv/range", body);
      if (reply.isPresent() && HEADER.matcher(reply.get()).find()) {
        String count = find(COUNT, reply.get());
        // grpc-gateway leaves out a field at its default: no "count" means 0.
        return OptionalLong.of(count == null ? 0 : Long.parseLong(count));
      }
    }
    return OptionalLong.empty();
  }

  private static String base64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  private static String find(Pattern pattern, String text) {
    Matcher m = pattern.matcher(text);
    return m.find() ? m.group(1) : null;
  }
}
