package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Three ZooKeeper servers ({@code QuorumPeerMain} of the ZooKeeper jar that Curator brings), each a
 * JVM of its own, whose quorum and election traffic runs through links, so that a server can be cut
 * off from the others while its clients stay connected to it.
 *
 * <p>The same trick as {@link Cluster}: servers are named ({@code server.j=zj:Q:E}) and each runs
 * with a hosts file of its own, in which it is {@code 127.78.0.j} (where it binds) and every other
 * server {@code k} is {@code 127.78.j.k}, where the links {@code zj->zk} for the quorum and the
 * election port listen and forward to {@code 127.78.0.k}.
 *
 * <p>Timing is ZooKeeper's sample configuration scaled down to a short TTL: {@code tickTime=500},
 * {@code initLimit=10}, {@code syncLimit=5} (a follower that hears nothing from the leader gives up
 * after 2.5 s), and the clients ask for the session timeout docs/zookeeper.md asks of an ensemble
 * ({@link #sessionTimeoutMillis}). The nemesis can skew a server's clock: ZooKeeper's {@code Time}, which its session
 * expiry reads, is patched by the clock agent.
 */
final class ZooKeeperCluster implements StoreCluster {

  private static final Logger log = LoggerFactory.getLogger(ZooKeeperCluster.class);
  static final int SIZE = 3;
  static final int TICK_MILLIS = 500;
  static final int INIT_LIMIT = 10;
  static final int SYNC_LIMIT = 5;
  /** The ZooKeeper backend's layout: lease N's holder is this znode's child {@code holder}. */
  static final String LEASES = "/leasehold/leases/";

  private final Path dir;
  private final String classPath;
  private final Clocks clocks;
  private final int[] clientPorts = new int[SIZE];
  private final int[] quorumPorts = new int[SIZE];
  private final int[] electionPorts = new int[SIZE];
  private final Process[] processes = new Process[SIZE];
  private final List<ProxyLink> peerLinks = new ArrayList<>(); // (i, k, quorum), (i, k, election) for i != k

  ZooKeeperCluster(Path dir, String classPath, Clocks clocks) {
    this.dir = dir;
    this.classPath = classPath;
    this.clocks = clocks;
  }

  private static String bindIp(int j) {
    return "127.78.0." + (j + 1);
  }

  private static String viewIp(int from, int to) {
    return "127.78." + (from + 1) + "." + (to + 1);
  }

  private static String host(int j) {
    return "z" + (j + 1);
  }

  @Override
  public String kind() {
    return "zookeeper";
  }

  @Override
  public int size() {
    return SIZE;
  }

  @Override
  public String name(int j) {
    return host(j);
  }

  @Override
  public void start() {
    try {
      Files.createDirectories(dir);
      for (int j = 0; j < SIZE; j++) {
        List<String> ips = new ArrayList<>(List.of(bindIp(j)));
        for (int i = 0; i < SIZE; i++) {
          if (i != j) {
            ips.add(viewIp(i, j));
          }
        }
        int p = Wire.freePorts(ips, 3);
        clientPorts[j] = p;
        quorumPorts[j] = p + 1;
        electionPorts[j] = p + 2;
      }
      String host = java.net.InetAddress.getLocalHost().getHostName();
      StringBuilder servers = new StringBuilder();
      for (int j = 0; j < SIZE; j++) {
        servers.append("server.").append(j + 1).append('=').append(host(j)).append(':').append(quorumPorts[j]).append(':')
            .append(electionPorts[j]).append('\n');
      }
      for (int i = 0; i < SIZE; i++) {
        StringBuilder hosts = new StringBuilder("127.0.0.1 localhost " + host + "\n");
        for (int k = 0; k < SIZE; k++) {
          hosts.append(i == k ? bindIp(k) : viewIp(i, k)).append(' ').append(host(k)).append('\n');
          if (i != k) {
            peerLinks.add(ProxyLink.open(host(i) + "->" + host(k) + ":quorum",
                new InetSocketAddress(viewIp(i, k), quorumPorts[k]), new InetSocketAddress(bindIp(k), quorumPorts[k])));
            peerLinks.add(ProxyLink.open(host(i) + "->" + host(k) + ":election",
                new InetSocketAddress(viewIp(i, k), electionPorts[k]), new InetSocketAddress(bindIp(k), electionPorts[k])));
          }
        }
        Files.writeString(dir.resolve("hosts-" + host(i)), hosts, StandardCharsets.UTF_8);
        Path data = dir.resolve(host(i)).toAbsolutePath();
        Files.createDirectories(data);
        Files.writeString(data.resolve("myid"), (i + 1) + "\n", StandardCharsets.US_ASCII);
        Files.writeString(dir.resolve(host(i) + ".cfg"),
            "tickTime=" + TICK_MILLIS + "\n"
                + "initLimit=" + INIT_LIMIT + "\n"
                + "syncLimit=" + SYNC_LIMIT + "\n"
                + "maxSessionTimeout=120000\n"
                + "dataDir=" + data + "\n"
                + "clientPort=" + clientPorts[i] + "\n"
                + "clientPortAddress=" + bindIp(i) + "\n"
                + servers
                + "admin.enableServer=false\n"
                + "4lw.commands.whitelist=srvr,ruok\n",
            StandardCharsets.UTF_8);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set up ZooKeeper in " + dir, e);
    }
    for (int j = 0; j < SIZE; j++) {
      launch(j);
    }
  }

  private void launch(int j) {
    List<String> cmd = new ArrayList<>(List.of(
        Children.java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        "-Djdk.net.hosts.file=" + dir.resolve("hosts-" + host(j)).toAbsolutePath()));
    cmd.addAll(clocks.jvmOptions(host(j), Clocks.ZOOKEEPER));
    cmd.addAll(List.of("-cp", classPath, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        dir.resolve(host(j) + ".cfg").toAbsolutePath().toString()));
    processes[j] = Children.start(cmd, dir.resolve(host(j) + ".log"));
    log.info("ZooKeeper server {} started (pid {}), clients on {}", host(j), processes[j].pid(), clientAddress(j));
  }

  private Optional<String> srvr(int j) {
    if (processes[j] == null || !processes[j].isAlive()) {
      return Optional.empty();
    }
    return Wire.exchange(clientAddress(j), "srvr");
  }

  private static Optional<String> field(String reply, String name) {
    String prefix = name + ": ";
    return reply.lines().filter(l -> l.startsWith(prefix)).map(l -> l.substring(prefix.length()).strip()).findFirst();
  }

  @Override
  public Optional<Integer> leader() {
    int leader = -1;
    long zxid = -1;
    for (int j = 0; j < SIZE; j++) {
      Optional<String> s = srvr(j);
      if (s.isEmpty() || !"leader".equals(field(s.get(), "Mode").orElse(null))) {
        continue;
      }
      // A leader that lost its quorum says so within syncLimit ticks; until then the newer epoch wins.
      String z = field(s.get(), "Zxid").orElse("0x0");
      long v;
      try {
        v = Long.parseUnsignedLong(z.startsWith("0x") ? z.substring(2) : z, 16);
      } catch (NumberFormatException e) {
        v = 0;
      }
      if (v > zxid) {
        leader = j;
        zxid = v;
      }
    }
    return leader < 0 ? Optional.empty() : Optional.of(leader);
  }

  @Override
  public boolean answers(int j) {
    Optional<String> mode = srvr(j).flatMap(s -> field(s, "Mode"));
    return mode.isPresent() && (mode.get().equals("leader") || mode.get().equals("follower"));
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
    return true;
  }

  private List<ProxyLink> linksOf(int j) {
    List<ProxyLink> result = new ArrayList<>();
    int n = 0;
    for (int i = 0; i < SIZE; i++) {
      for (int k = 0; k < SIZE; k++) {
        if (i != k) {
          if (i == j || k == j) {
            result.add(peerLinks.get(n));
            result.add(peerLinks.get(n + 1));
          }
          n += 2;
        }
      }
    }
    return result;
  }

  @Override
  public void cutPeers(int j) {
    linksOf(j).forEach(ProxyLink::cut);
  }

  @Override
  public void healPeers(int j) {
    linksOf(j).forEach(ProxyLink::heal);
  }

  @Override
  public void healAll() {
    peerLinks.forEach(ProxyLink::healAll);
  }

  @Override
  public boolean skewable() {
    return true;
  }

  @Override
  public InetSocketAddress clientAddress(int j) {
    return new InetSocketAddress(bindIp(j), clientPorts[j]);
  }

  /**
   * The session timeout docs/zookeeper.md asks of an ensemble: {@code ttl + heartbeatInterval +
   * tickTime}, so that neither a follower's late report of a session's activity nor a cut-off
   * leader answering syncs until it notices can let a session expire before its holder stops.
   */
  static long sessionTimeoutMillis(long ttlMillis) {
    return Math.max(ttlMillis + ttlMillis / 3 + TICK_MILLIS, 2L * TICK_MILLIS);
  }

  @Override
  public String leaseUri(List<Integer> linkPorts, long ttlMillis) {
    StringBuilder b = new StringBuilder("zookeeper://");
    for (int j = 0; j < linkPorts.size(); j++) {
      b.append(j == 0 ? "" : ",").append("127.0.0.1:").append(linkPorts.get(j));
    }
    return b.append("?sessionTimeout=").append(sessionTimeoutMillis(ttlMillis)).append("ms").toString();
  }

  /** {@code deleteall}-free {@code delete /leasehold/leases/NAME/holder} with a client of its own. */
  @Override
  public boolean deleteLease(String name) {
    StringBuilder connect = new StringBuilder();
    for (int j = 0; j < SIZE; j++) {
      connect.append(j == 0 ? "" : ",").append(bindIp(j)).append(':').append(clientPorts[j]);
    }
    CountDownLatch connected = new CountDownLatch(1);
    ZooKeeper zk = null;
    try {
      zk = new ZooKeeper(connect.toString(), 10_000, e -> {
        if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
          connected.countDown();
        }
      });
      if (!connected.await(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("no ZooKeeper server took the operator's connection within 10 s");
      }
      zk.delete(LEASES + ZNodeNames.encode(name) + "/holder", -1);
      return true;
    } catch (KeeperException.NoNodeException e) {
      return false;
    } catch (KeeperException | IOException e) {
      throw new IllegalStateException("the operator's delete of " + name + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } finally {
      if (zk != null) {
        try {
          zk.close();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  @Override
  public String settings() {
    return "3 ZooKeeper servers (-Xmx256m), tickTime " + TICK_MILLIS + " ms, initLimit " + INIT_LIMIT + ", syncLimit "
        + SYNC_LIMIT + "; quorum and election traffic through cuttable links; session timeout TTL + TTL/3 + tickTime";
  }

  @Override
  public void close() {
    for (int j = 0; j < SIZE; j++) {
      Children.kill(processes[j]);
    }
    peerLinks.forEach(ProxyLink::close);
  }

  /** The ZooKeeper backend's collision-free znode names (docs/zookeeper.md): [A-Za-z0-9_-] as is, the rest %XX. */
  static final class ZNodeNames {
    private ZNodeNames() {}

    static String encode(String name) {
      StringBuilder b = new StringBuilder();
      for (byte c : name.getBytes(StandardCharsets.UTF_8)) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
          b.append((char) c);
        } else {
          b.append('%').append(String.format("%02X", c & 0xff));
        }
      }
      return b.toString();
    }
  }
}
