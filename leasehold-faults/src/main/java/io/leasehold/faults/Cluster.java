package io.leasehold.faults;

import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A 3-node consistent core in child JVMs whose Raft traffic runs through one {@link ProxyLink} per
 * ordered pair of nodes, so that a node can be cut off both ways.
 *
 * <p>Ratis gives every node the same peer list, so a proxy cannot sit "in front of" a node by port
 * alone: node {@code j} must listen where no one else connects. Every node therefore runs with a
 * hosts file of its own ({@code -Djdk.net.hosts.file}) and the peers are named, not numbered
 * ({@code n1=n1:P1,...}). In node {@code j}'s file, {@code nj} is {@code 127.77.0.j}, where it binds;
 * in node {@code i}'s file, {@code nj} is {@code 127.77.i.j}, where the link {@code ni->nj} listens
 * (same port) and forwards to {@code 127.77.0.j}. So every connection node {@code i} opens to node
 * {@code j} — appendEntries, votes, forwarded client writes — crosses link {@code ni->nj}, and
 * cutting {@code ni->nj} and {@code nj->ni} for every {@code i} isolates {@code j} whatever its role.
 * No root needed: all of {@code 127.0.0.0/8} is loopback on Linux.
 */
final class Cluster implements StoreCluster {

  private static final Logger log = LoggerFactory.getLogger(Cluster.class);
  static final int SIZE = 3;

  private final Path dir;
  private final String classPath;
  private final int[] ports = new int[SIZE];
  private final Process[] processes = new Process[SIZE];
  /** Each slot's Raft id now: {@code n2} until the membership nemesis replaces it by {@code n2g1}, ... */
  private final String[] raftIds = new String[SIZE];
  private final int[] generations = new int[SIZE];
  private final List<ProxyLink> raftLinks = new ArrayList<>();
  /** Node i to node j's client port (election-timeout checks, the add-node check), cut with the Raft links. */
  private final List<ProxyLink> clientLinks = new ArrayList<>();
  private final CoreClient[] direct = new CoreClient[SIZE];
  private final Clocks clocks;

  Cluster(Path dir, String classPath, Clocks clocks) {
    this.dir = dir;
    this.classPath = classPath;
    this.clocks = clocks;
  }

  /** {@return node {@code j}'s id} */
  static String id(int j) {
    return "n" + (j + 1);
  }

  @Override
  public String name(int j) {
    return id(j);
  }

  @Override
  public String kind() {
    return "core";
  }

  @Override
  public int size() {
    return SIZE;
  }

  @Override
  public InetSocketAddress clientAddress(int j) {
    return new InetSocketAddress(bindIp(j), ports[j]);
  }

  private static String bindIp(int j) {
    return "127.77.0." + (j + 1);
  }

  private static String viewIp(int from, int to) {
    return "127.77." + (from + 1) + "." + (to + 1);
  }

  /** Picks ports, writes hosts files, opens the Raft links and starts every node. */
  @Override
  public void start() {
    try {
      Files.createDirectories(dir);
      for (int j = 0; j < SIZE; j++) {
        ports[j] = freePortPair(j);
        raftIds[j] = id(j);
      }
      StringBuilder peers = new StringBuilder();
      for (int j = 0; j < SIZE; j++) {
        peers.append(j == 0 ? "" : ",").append(id(j)).append('=').append(id(j)).append(':').append(ports[j]);
      }
      String host = java.net.InetAddress.getLocalHost().getHostName();
      for (int i = 0; i < SIZE; i++) {
        StringBuilder hosts = new StringBuilder("127.0.0.1 localhost " + host + "\n");
        for (int j = 0; j < SIZE; j++) {
          hosts.append(i == j ? bindIp(j) : viewIp(i, j)).append(' ').append(id(j)).append('\n');
          if (i != j) {
            raftLinks.add(ProxyLink.open(id(i) + "->" + id(j),
                new InetSocketAddress(viewIp(i, j), ports[j] + 1), new InetSocketAddress(bindIp(j), ports[j] + 1)));
            clientLinks.add(ProxyLink.open(id(i) + "->" + id(j) + ":client",
                new InetSocketAddress(viewIp(i, j), ports[j]), new InetSocketAddress(bindIp(j), ports[j])));
          }
        }
        Files.writeString(dir.resolve("hosts-" + id(i)), hosts, StandardCharsets.UTF_8);
      }
      Files.writeString(dir.resolve("peers"), peers, StandardCharsets.UTF_8);
      for (int j = 0; j < SIZE; j++) {
        direct[j] = new CoreClient(List.of(clientAddress(j)), Duration.ofSeconds(2));
        launch(j, true);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set up the cluster in " + dir, e);
    }
  }

  /** Starts node {@code j}; {@code bootstrap} on its first start only, which formats its directory. */
  private void launch(int j, boolean bootstrap) {
    launch(j, bootstrap ? "--bootstrap" : null);
  }

  /** Starts node {@code j} with {@code flag} ({@code --bootstrap}, {@code --join}, or null to recover). */
  private void launch(int j, String flag) {
    // Each slot's Raft id now, at the slot's host name (which the hosts files map) and ports.
    StringBuilder peers = new StringBuilder();
    for (int k = 0; k < SIZE; k++) {
      peers.append(k == 0 ? "" : ",").append(raftIds[k]).append('=').append(id(k)).append(':').append(ports[k]);
    }
    List<String> cmd = new ArrayList<>(List.of(
        Children.java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        "-Djdk.net.hosts.file=" + dir.resolve("hosts-" + id(j)).toAbsolutePath()));
    // Ratis's own account of roles, elections and membership in the node's log (the CLI logs only
    // its errors): a run that goes wrong then says why a node stepped down, closed a division, or
    // did not take a configuration (seen once: a joining node's division closed, and nothing said why).
    cmd.add("-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.RaftServer$Division=info");
    cmd.add("-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl=info");
    // The clock agent: the nemesis can make this node's session clock run fast or slow.
    cmd.addAll(clocks.jvmOptions(id(j), Clocks.LEASEHOLD));
    cmd.addAll(List.of(
        "-cp", classPath, "io.leasehold.cli.Main", "server",
        "--id", raftIds[j], "--peers", peers.toString(), "--data-dir", dir.resolve(id(j)).toAbsolutePath().toString()));
    if (flag != null) {
      cmd.add(flag);
    }
    processes[j] = Children.start(cmd, dir.resolve(id(j) + ".log"));
    log.info("node {} started (pid {}), clients on {}", id(j), processes[j].pid(), clientAddress(j));
  }

  /** {@return whether node {@code j}'s process runs (it may be frozen)} */
  private boolean isUp(int j) {
    return processes[j] != null && processes[j].isAlive();
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
    if (!isUp(j)) {
      launch(j, false);
    }
  }

  @Override
  public boolean canIsolate() {
    return true;
  }

  @Override
  public boolean skewable() {
    return true;
  }

  /** Cuts node {@code j} from the other nodes, both ways. */
  @Override
  public void cutPeers(int j) {
    for (ProxyLink l : raftLinksOf(j)) {
      l.cut();
    }
    for (ProxyLink l : linksOf(clientLinks, j)) {
      l.cut();
    }
  }

  @Override
  public void healPeers(int j) {
    for (ProxyLink l : raftLinksOf(j)) {
      l.heal();
    }
    for (ProxyLink l : linksOf(clientLinks, j)) {
      l.heal();
    }
  }

  @Override
  public void healAll() {
    raftLinks.forEach(ProxyLink::healAll);
    clientLinks.forEach(ProxyLink::healAll);
  }

  private List<ProxyLink> raftLinksOf(int j) {
    return linksOf(raftLinks, j);
  }

  /** The links of {@code links} (one per ordered pair, in start order) from or to node {@code j}. */
  private static List<ProxyLink> linksOf(List<ProxyLink> links, int j) {
    List<ProxyLink> result = new ArrayList<>();
    int k = 0;
    for (int i = 0; i < SIZE; i++) {
      for (int t = 0; t < SIZE; t++) {
        if (i != t) {
          if (i == j || t == j) {
            result.add(links.get(k));
          }
          k++;
        }
      }
    }
    return result;
  }

  /** {@return the index of the node that names itself leader, if one answers} */
  @Override
  public Optional<Integer> leader() {
    for (int j = 0; j < SIZE; j++) {
      if (!isUp(j)) {
        continue;
      }
      try {
        StatusResponse s = direct[j].<StatusResponse>call((st, o) -> st.status(StatusRequest.getDefaultInstance(), o))
            .get(1, TimeUnit.SECONDS);
        if (!s.getLeaderId().isEmpty() && s.getCountsKnown()) {
          for (int i = 0; i < SIZE; i++) {
            if (raftIds[i].equals(s.getLeaderId())) {
              return Optional.of(i);
            }
          }
        }
      } catch (Exception e) {
        // this node does not know (frozen, cut off, starting): ask the next
      }
    }
    return Optional.empty();
  }

  /** {@return whether node {@code j} answers its Status call} */
  @Override
  public boolean answers(int j) {
    try {
      direct[j].<StatusResponse>call((st, o) -> st.status(StatusRequest.getDefaultInstance(), o)).get(1, TimeUnit.SECONDS);
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /**
   * A linearizable read through any node that answers.
   *
   * @param key the key or prefix
   * @param prefix whether {@code key} is a prefix
   * @return the answer
   * @throws IllegalStateException if no node answered
   */
  GetResponse read(String key, boolean prefix) {
    Exception last = null;
    for (int attempt = 0; attempt < 10; attempt++) {
      for (int j = 0; j < SIZE; j++) {
        try {
          return direct[j].<GetResponse>call((st, o) -> st.get(GetRequest.newBuilder().setKey(key).setPrefix(prefix).build(), o))
              .get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
          last = e;
        }
      }
    }
    throw new IllegalStateException("no node answered a read of " + key + ": " + last, last);
  }

  @Override
  public String leaseUri(List<Integer> linkPorts, long ttlMillis) {
    StringBuilder b = new StringBuilder("leasehold://");
    for (int j = 0; j < linkPorts.size(); j++) {
      b.append(j == 0 ? "" : ",").append("127.0.0.1:").append(linkPorts.get(j));
    }
    return b.toString();
  }

  @Override
  public boolean deleteLease(String name) {
    String key = "/_leasehold/leases/" + name;
    Exception last = null;
    // The leader first: a follower would forward it anyway.
    List<Integer> order = new ArrayList<>();
    leader().ifPresent(order::add);
    for (int j = 0; j < SIZE; j++) {
      if (!order.contains(j)) {
        order.add(j);
      }
    }
    for (int j : order) {
      CoreClient c = direct[j];
      try {
        DeleteResponse r = c.<DeleteResponse>call((st, o) -> st.delete(DeleteRequest.newBuilder()
            .setCall(c.newCall()).setKey(key).build(), o)).get(5, TimeUnit.SECONDS);
        return r.getDeleted();
      } catch (Exception e) {
        last = e;
      }
    }
    throw new IllegalStateException("no node answered the delete of " + key + ": " + last, last);
  }

  @Override
  public String settings() {
    return "3 core nodes (leasehold server, -Xmx256m), Raft traffic through cuttable links";
  }

  @Override
  public void close() {
    for (int j = 0; j < SIZE; j++) {
      Children.kill(processes[j]);
      if (direct[j] != null) {
        direct[j].close();
      }
    }
    raftLinks.forEach(ProxyLink::close);
    clientLinks.forEach(ProxyLink::close);
  }

  /**
   * The membership nemesis: node {@code j}'s disk dies and an operator replaces it online. It is
   * killed and its directory wiped; it is removed from the membership while it is down ({@code
   * admin remove-node --force}: two voters remain); it starts again empty with {@code --join}
   * under a new id at the same address and is added ({@code admin add-node}). With {@code
   * killLeader}, the leader is killed right after the add was sent and restarted {@code
   * downMillis} later; the add that was under way ends one way or the other, and the add is sent
   * again until it is in force (the command is idempotent).
   *
   * @return what happened, for the nemesis log
   */
  java.util.Map<String, String> replaceWiped(int j, boolean killLeader, long downMillis) {
    java.util.Map<String, String> detail = new java.util.LinkedHashMap<>();
    String old = raftIds[j];
    Children.kill(processes[j]);
    processes[j] = null;
    deleteTree(dir.resolve(id(j)));
    detail.put("removed", old);
    admin(detail, "remove", "remove-node", old, "--force");
    raftIds[j] = id(j) + "g" + (++generations[j]);
    launch(j, "--join");
    detail.put("joined", raftIds[j]);
    awaitAnswer(j);
    String add = raftIds[j] + "=" + id(j) + ":" + ports[j];
    if (killLeader) {
      Optional<Integer> leader = leader();
      java.util.concurrent.CompletableFuture<String> adding =
          java.util.concurrent.CompletableFuture.supplyAsync(() -> adminOnce("add-node", add, "--timeout", "20s"));
      // j is no member yet, so the leader is another node.
      if (leader.isPresent()) {
        int l = leader.get();
        Children.kill(processes[l]);
        processes[l] = null;
        detail.put("killed-leader", raftIds[l]);
        sleep(downMillis);
        launch(l, false);
      }
      detail.put(leader.isPresent() ? "add-while-killed" : "add-no-leader-to-kill", adding.join());
    }
    admin(detail, "add", j, () -> restartStuckLeader(detail, j), "add-node", add);
    return detail;
  }

  /** How long an add may fail before the harness applies the operator's runbook for a stuck add. */
  private static final long STUCK_ADD_MILLIS = TimeUnit.MINUTES.toMillis(1);

  /**
   * The runbook step for an add that the leader never answers (docs/operations.md): restart the
   * leader. Ratis 3.3 can leave a leader in its catch-up stage for good: when the log sender to
   * the node being added stops and is restarted, {@code LeaderStateImpl.restart} looks the node
   * up in the configuration, where a node still catching up is not yet, and starts no new sender;
   * that leader then neither completes nor times the change out, and refuses to hand its
   * leadership over while the change is staged (seen once, in a 32-minute run with seed 2101).
   * A new leader starts without the half-made change, and the add sent again completes.
   */
  private void restartStuckLeader(java.util.Map<String, String> detail, int joining) {
    Optional<Integer> leader = leader();
    if (leader.isEmpty() || leader.get() == joining) {
      detail.put("add-stuck", "no leader to restart");
      return;
    }
    int l = leader.get();
    detail.put("add-stuck-restarted-leader", raftIds[l]);
    log.warn("the add has failed for {} s: restarting the leader {}, as the runbook says", STUCK_ADD_MILLIS / 1000, raftIds[l]);
    Children.kill(processes[l]);
    processes[l] = null;
    launch(l, false);
  }

  /** Runs an admin command until it succeeds (at most 3 minutes); records the attempts. */
  private void admin(java.util.Map<String, String> detail, String key, String... args) {
    admin(detail, key, -1, () -> {}, args);
  }

  /**
   * Runs an admin command until it succeeds (at most 3 minutes), and stops at once if node {@code
   * watched} (unless -1) exits meanwhile: a node being added that stops by itself is never added.
   * Runs {@code whenStuck} once, after {@link #STUCK_ADD_MILLIS} of failures.
   */
  private void admin(
      java.util.Map<String, String> detail, String key, int watched, Runnable whenStuck, String... args) {
    long start = System.nanoTime();
    long deadline = start + TimeUnit.MINUTES.toNanos(3);
    boolean stuckHandled = false;
    int attempts = 0;
    String last;
    do {
      Process node = watched >= 0 ? processes[watched] : null;
      if (watched >= 0 && (node == null || !node.isAlive())) {
        throw new IllegalStateException("node " + raftIds[watched] + " exited"
            + (node == null ? "" : " (code " + node.exitValue() + ")") + " before `leasehold admin "
            + String.join(" ", args) + "` succeeded; why is at the end of " + dir.resolve(id(watched) + ".log"));
      }
      attempts++;
      last = adminOnce(args);
      if (last.equals("0")) {
        detail.put(key + "-attempts", Integer.toString(attempts));
        return;
      }
      if (!stuckHandled && System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(STUCK_ADD_MILLIS)) {
        stuckHandled = true;
        whenStuck.run();
      }
      sleep(500);
    } while (System.nanoTime() - deadline < 0);
    throw new IllegalStateException("leasehold admin " + String.join(" ", args) + " did not succeed in 3 minutes: " + last);
  }

  /** {@return "0" when the command succeeded, else its exit code and first error line} */
  private String adminOnce(String... args) {
    StringBuilder uri = new StringBuilder("leasehold://");
    for (int k = 0; k < SIZE; k++) {
      uri.append(k == 0 ? "" : ",").append(bindIp(k)).append(':').append(ports[k]);
    }
    List<String> line = new ArrayList<>(List.of("admin"));
    line.addAll(List.of(args));
    line.addAll(List.of("--backend", uri.toString()));
    java.io.StringWriter out = new java.io.StringWriter();
    java.io.StringWriter err = new java.io.StringWriter();
    int code = io.leasehold.cli.Main.execute(new java.io.PrintWriter(out, true), new java.io.PrintWriter(err, true),
        line.toArray(String[]::new));
    log.info("leasehold {}: exit {} {}{}", String.join(" ", line), code, out.toString().strip(), err.toString().strip());
    return code == 0 ? "0" : code + ":" + err.toString().strip().lines().findFirst().orElse("").replace(' ', '_');
  }

  private void awaitAnswer(int j) {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
    while (System.nanoTime() - deadline < 0) {
      try {
        direct[j].<StatusResponse>call((st, o) -> st.status(StatusRequest.newBuilder().setNodeOnly(true).build(), o))
            .get(2, TimeUnit.SECONDS);
        return;
      } catch (Exception e) {
        sleep(200);
      }
    }
    throw new IllegalStateException("node " + raftIds[j] + " did not answer within 3 minutes of its start");
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot wipe " + root, e);
    }
  }

  /** A port P free with P + 1 on the node's own address and on every address others reach it by. */
  private static int freePortPair(int j) throws IOException {
    for (int attempt = 0; attempt < 100; attempt++) {
      int p;
      try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName(bindIp(j)))) {
        p = s.getLocalPort();
      }
      if (p >= 65534) {
        continue;
      }
      List<String> ips = new ArrayList<>(List.of(bindIp(j)));
      for (int i = 0; i < SIZE; i++) {
        if (i != j) {
          ips.add(viewIp(i, j));
        }
      }
      boolean free = true;
      for (String ip : ips) {
        for (int port : new int[] {p, p + 1}) {
          try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(ip, port));
          } catch (IOException e) {
            free = false;
          }
        }
      }
      if (free) {
        return p;
      }
    }
    throw new IOException("no free port pair for node " + id(j));
  }
}
