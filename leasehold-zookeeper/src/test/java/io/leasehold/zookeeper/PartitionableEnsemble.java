package io.leasehold.zookeeper;

import io.leasehold.testkit.TcpProxy;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Collection;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.awaitility.Awaitility;

/**
 * A ZooKeeper ensemble in this JVM whose servers reach each other only through {@link TcpProxy}s,
 * one per direction, server pair and port (quorum and election), so that a test can cut one
 * server off from the others while its clients stay connected to it: a real partition, in which
 * the cut-off server hears nothing and goes on serving reads until it notices (after {@code
 * syncLimit × tickTime}), not a killed server whose peers see its sockets close at once.
 *
 * <p>Each server is told the others' addresses as the ports of its own proxies to them (curator's
 * {@link TestingCluster} takes one list of server specs per server).
 */
final class PartitionableEnsemble implements AutoCloseable {

  private static final String HOST = "127.0.0.1";

  private final List<InstanceSpec> servers = new ArrayList<>();
  /** The proxies that carry traffic from or to a server, by server id. */
  private final Map<Integer, List<TcpProxy>> links = new HashMap<>();
  private final List<TcpProxy> proxies = new ArrayList<>();
  private final TestingCluster cluster;

  /**
   * Starts {@code size} servers.
   *
   * @param size how many
   * @param syncLimit ticks a follower and its leader wait for each other before giving up
   */
  PartitionableEnsemble(int size, int syncLimit) {
    Map<String, Object> config = new HashMap<>();
    config.put("minSessionTimeout", String.valueOf(2 * ZooKeeperServers.TICK_MILLIS));
    config.put("maxSessionTimeout", "60000");
    config.put("syncLimit", String.valueOf(syncLimit));
    for (int id = 1; id <= size; id++) {
      servers.add(
          new InstanceSpec(
              null,
              ZooKeeperServers.port(),
              ZooKeeperServers.port(),
              ZooKeeperServers.port(),
              true,
              id,
              ZooKeeperServers.TICK_MILLIS,
              1000,
              config,
              HOST));
      links.put(id, new ArrayList<>());
    }
    Map<InstanceSpec, Collection<InstanceSpec>> views = new LinkedHashMap<>();
    for (InstanceSpec self : servers) {
      List<InstanceSpec> view = new ArrayList<>();
      for (InstanceSpec other : servers) {
        if (other == self) {
          view.add(self);
          continue;
        }
        TcpProxy quorum = proxy(self, other, other.getQuorumPort());
        TcpProxy election = proxy(self, other, other.getElectionPort());
        // How self sees other: other's id and client port, its peer ports behind self's proxies.
        view.add(new InstanceSpec(other.getDataDirectory(), other.getPort(), election.port(),
            quorum.port(), false, other.getServerId(), ZooKeeperServers.TICK_MILLIS, 1000, config, HOST));
      }
      views.put(self, view);
    }
    cluster = new TestingCluster(views);
    try {
      cluster.start();
    } catch (Exception e) {
      close();
      throw new IllegalStateException("could not start a partitionable ZooKeeper ensemble", e);
    }
  }

  private TcpProxy proxy(InstanceSpec from, InstanceSpec to, int port) {
    TcpProxy p = TcpProxy.start(new InetSocketAddress(HOST, port));
    proxies.add(p);
    links.get(from.getServerId()).add(p);
    links.get(to.getServerId()).add(p);
    return p;
  }

  /** Cuts server {@code id} off from every other server; its clients stay connected to it. */
  void isolate(int id) {
    links.get(id).forEach(TcpProxy::blackhole);
  }

  /** Ends every partition. */
  void heal() {
    proxies.forEach(TcpProxy::heal);
  }

  List<InstanceSpec> servers() {
    return servers;
  }

  /** {@return the client address of one server, for a client that must talk to it alone} */
  static String connectString(InstanceSpec server) {
    return HOST + ":" + server.getPort();
  }

  String connectString() {
    return cluster.getConnectString();
  }

  /** Waits until every server serves as leader or follower, and returns the one that leads. */
  InstanceSpec awaitQuorum(Duration atMost) {
    return Awaitility.await("all " + servers.size() + " servers serving, one leading")
        .atMost(atMost)
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> {
              InstanceSpec leader = null;
              for (InstanceSpec s : servers) {
                String mode = mode(s);
                if ("leader".equals(mode)) {
                  leader = s;
                } else if (!"follower".equals(mode)) {
                  return null;
                }
              }
              return leader;
            },
            leader -> leader != null);
  }

  /** The server's role as its {@code srvr} command reports it: leader, follower, or null. */
  static String mode(InstanceSpec spec) {
    try {
      String status = FourLetterWordMain.send4LetterWord(HOST, spec.getPort(), "srvr");
      for (String line : status.split("\n")) {
        if (line.startsWith("Mode: ")) {
          return line.substring("Mode: ".length()).strip();
        }
      }
      return null;
    } catch (Exception notServing) {
      return null;
    }
  }

  @Override
  public void close() {
    try {
      heal();
      if (cluster != null) {
        cluster.close();
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } finally {
      proxies.forEach(TcpProxy::close);
    }
  }
}
