package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Three etcd members (the {@code etcd} binary, Debian's {@code etcd-server}) with etcd's defaults
 * (heartbeat 100 ms, election timeout 1 s), each on a loopback address of its own.
 *
 * <p>The nemesis can kill, restart and freeze members, but not cut one off from the others: etcd
 * members learn each other's peer URLs from the cluster's membership, the same URL for everyone,
 * and etcd (Go) resolves names without Java's per-process hosts file, so there is no way to give
 * each member its own view of the others as {@link Cluster} does for the core. A link in front of
 * a member's peer port alone would cut only the connections others open to it, not those it opens,
 * which is not a partition. Partitions of etcd therefore stay client-side (the clients' links).
 */
final class EtcdCluster implements StoreCluster {

  private static final Logger log = LoggerFactory.getLogger(EtcdCluster.class);
  static final int SIZE = 3;
  /** The etcd backend's default namespace; lease N is the key {@code /leasehold/leases/N}. */
  static final String LEASES = "/leasehold/leases/";

  private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\":\"(\\d+)\"");
  private static final Pattern LEADER = Pattern.compile("\"leader\":\"(\\d+)\"");
  private static final Pattern RAFT_TERM = Pattern.compile("\"raftTerm\":\"(\\d+)\"");

  private final Path dir;
  private final String binary;
  private final int[] clientPorts = new int[SIZE];
  private final int[] peerPorts = new int[SIZE];
  private final Process[] processes = new Process[SIZE];
  private final String token = "leasehold-faults-" + UUID.randomUUID().toString().substring(0, 8);

  EtcdCluster(Path dir) {
    this.dir = dir;
    this.binary = binary();
  }

  /** {@return the etcd binary: the first on PATH, else /usr/bin/etcd} */
  static String binary() {
    List<Path> candidates = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      for (String d : path.split(java.io.File.pathSeparator)) {
        if (!d.isEmpty()) {
          candidates.add(Path.of(d, "etcd"));
        }
      }
    }
    candidates.add(Path.of("/usr/bin/etcd"));
    return candidates.stream().filter(Files::isExecutable).findFirst().map(Path::toString)
        .orElseThrow(() -> new IllegalStateException(
            "--lease-backend etcd needs the etcd binary (not on PATH, not in /usr/bin): apt-get install -y etcd-server"));
  }

  private static String ip(int j) {
    return "127.79.0." + (j + 1);
  }

  @Override
  public String kind() {
    return "etcd";
  }

  @Override
  public int size() {
    return SIZE;
  }

  @Override
  public String name(int j) {
    return "e" + (j + 1);
  }

  @Override
  public void start() {
    try {
      Files.createDirectories(dir);
      for (int j = 0; j < SIZE; j++) {
        int p = Wire.freePorts(List.of(ip(j)), 2);
        clientPorts[j] = p;
        peerPorts[j] = p + 1;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set up etcd in " + dir, e);
    }
    for (int j = 0; j < SIZE; j++) {
      launch(j);
    }
  }

  private String peerUrl(int j) {
    return "http://" + ip(j) + ":" + peerPorts[j];
  }

  private void launch(int j) {
    StringBuilder initial = new StringBuilder();
    for (int k = 0; k < SIZE; k++) {
      initial.append(k == 0 ? "" : ",").append(name(k)).append('=').append(peerUrl(k));
    }
    String clientUrl = "http://" + ip(j) + ":" + clientPorts[j];
    // The same command restarts a member: on a data directory that holds a member, etcd ignores the
    // --initial-cluster* flags and recovers.
    List<String> cmd = List.of(binary,
        "--name=" + name(j),
        "--data-dir=" + dir.resolve(name(j)).toAbsolutePath(),
        "--listen-client-urls=" + clientUrl,
        "--advertise-client-urls=" + clientUrl,
        "--listen-peer-urls=" + peerUrl(j),
        "--initial-advertise-peer-urls=" + peerUrl(j),
        "--initial-cluster=" + initial,
        "--initial-cluster-state=new",
        "--initial-cluster-token=" + token,
        "--logger=zap",
        "--log-outputs=stderr");
    processes[j] = Children.start(cmd, dir.resolve(name(j) + ".log"));
    log.info("etcd member {} started (pid {}), clients on {}", name(j), processes[j].pid(), clientAddress(j));
  }

  @Override
  public Optional<Integer> leader() {
    int leader = -1;
    long term = -1;
    for (int j = 0; j < SIZE; j++) {
      if (processes[j] == null || !processes[j].isAlive()) {
        continue;
      }
      Optional<String> status = Wire.http(clientAddress(j), "POST", "/v3/maintenance/status", "{}").map(s -> s.replace(" ", ""));
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
          leader = j;
          term = t;
        }
      }
    }
    return leader < 0 ? Optional.empty() : Optional.of(leader);
  }

  /** {@code /health} is true when the member has a leader and a read through it succeeds. */
  @Override
  public boolean answers(int j) {
    return processes[j] != null && processes[j].isAlive()
        && Wire.http(clientAddress(j), "GET", "/health", null).filter(b -> b.replace(" ", "").contains("\"health\":\"true\""))
            .isPresent();
  }

  @Override
  public Process process(int j) {
    return processes[j];
  }

  @Override
  public void kill(int j) {
    Children.kill(processes[j]);
    processes[j] = null;
  }

  @Override
  public void restart(int j) {
    if (processes[j] == null || !processes[j].isAlive()) {
      launch(j);
    }
  }

  @Override
  public boolean canIsolate() {
    return false;
  }

  @Override
  public void cutPeers(int j) {
    throw new UnsupportedOperationException("etcd members cannot be cut off from each other here (see the class comment)");
  }

  @Override
  public void healPeers(int j) {
    // nothing was cut
  }

  @Override
  public void healAll() {
    // nothing was cut
  }

  @Override
  public boolean skewable() {
    return false; // Go: no agent, and its clock is the kernel's
  }

  @Override
  public InetSocketAddress clientAddress(int j) {
    return new InetSocketAddress(ip(j), clientPorts[j]);
  }

  @Override
  public String leaseUri(List<Integer> linkPorts, long ttlMillis) {
    StringBuilder b = new StringBuilder("etcd://");
    for (int j = 0; j < linkPorts.size(); j++) {
      b.append(j == 0 ? "" : ",").append("127.0.0.1:").append(linkPorts.get(j));
    }
    return b.toString();
  }

  /** {@code etcdctl del /leasehold/leases/NAME}, through the JSON gateway of the leader (or any member). */
  @Override
  public boolean deleteLease(String name) {
    String key = Base64.getEncoder().encodeToString((LEASES + name).getBytes(StandardCharsets.UTF_8));
    List<Integer> order = new ArrayList<>();
    leader().ifPresent(order::add);
    for (int j = 0; j < SIZE; j++) {
      if (!order.contains(j)) {
        order.add(j);
      }
    }
    for (int j : order) {
      Optional<String> reply = Wire.http(clientAddress(j), "POST", "/v3/kv/deleterange", "{\"key\":\"" + key + "\"}");
      if (reply.isPresent()) {
        // proto3 JSON leaves out a zero count
        return reply.get().replace(" ", "").contains("\"deleted\":\"1\"");
      }
    }
    throw new IllegalStateException("no etcd member answered the delete of " + LEASES + name);
  }

  @Override
  public String settings() {
    return "3 etcd members with etcd's defaults (heartbeat 100 ms, election timeout 1 s)";
  }

  @Override
  public void close() {
    for (int j = 0; j < SIZE; j++) {
      Children.kill(processes[j]);
    }
  }

  private static String find(Pattern pattern, String text) {
    Matcher m = pattern.matcher(text);
    return m.find() ? m.group(1) : null;
  }
}
