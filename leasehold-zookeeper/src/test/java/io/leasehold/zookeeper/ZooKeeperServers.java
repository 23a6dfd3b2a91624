package io.leasehold.zookeeper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;

/**
 * Real ZooKeeper servers in this JVM (curator-test), tuned for lease tests: a 50 ms tick, so
 * sessions as short as 100 ms are allowed and expiry is checked every 50 ms, and a session
 * timeout of up to a minute.
 */
final class ZooKeeperServers {

  static final int TICK_MILLIS = 50;

  static {
    // An embedded server that cannot bind its port ends the whole JVM by default (exit 2), and
    // with it every test of the module (seen once in a clean-clone run: "Address already in use"
    // in ZooKeeperPartitionTest, "The forked VM terminated"). Here it only fails its own test.
    org.apache.zookeeper.util.ServiceUtils.setSystemExitProcedure(
        org.apache.zookeeper.util.ServiceUtils.LOG_ONLY);
  }

  /**
   * Ports handed out below Linux's ephemeral range (32768-60999), never twice in this JVM, and
   * from a half of the range of its own for each of the two test JVMs of a module (Maven's
   * surefire runs two), so that the two never probe the same port at the same moment.
   */
  private static final int FIRST_PORT = 20_000 + 6_350 * (Integer.getInteger("leasehold.test.fork", 1) % 2);
  private static final int PORTS = 6_350;
  private static final java.util.concurrent.atomic.AtomicInteger NEXT_PORT =
      new java.util.concurrent.atomic.AtomicInteger(
          java.util.concurrent.ThreadLocalRandom.current().nextInt(PORTS));

  private ZooKeeperServers() {}

  /**
   * {@return a port free now, below the ephemeral range}. Curator's own choice (port 0, then
   * closed) is an ephemeral port, which this JVM's next outgoing connection may take as its local
   * port before the server binds it.
   */
  static int port() {
    for (int tries = 0; tries < 1000; tries++) {
      int port = FIRST_PORT + Math.floorMod(NEXT_PORT.getAndIncrement(), PORTS);
      try (java.net.ServerSocket probe = new java.net.ServerSocket(port)) {
        return probe.getLocalPort();
      } catch (IOException taken) {
        // in use: the next one
      }
    }
    throw new IllegalStateException("no free port between " + FIRST_PORT + " and " + (FIRST_PORT + PORTS - 1));
  }

  static InstanceSpec spec(int serverId) {
    Map<String, Object> config =
        Map.of(
            "minSessionTimeout", String.valueOf(2 * TICK_MILLIS), "maxSessionTimeout", "60000");
    // Data in a fresh directory under java.io.tmpdir (target/), deleted on close.
    return new InstanceSpec(null, port(), port(), port(), true, serverId, TICK_MILLIS, 1000, config);
  }

  static TestingServer standalone() {
    try {
      return new TestingServer(spec(-1), true);
    } catch (Exception e) {
      throw new IllegalStateException("could not start an in-process ZooKeeper server", e);
    }
  }

  static TestingCluster ensemble(int size) {
    List<InstanceSpec> specs = new ArrayList<>();
    for (int i = 1; i <= size; i++) {
      specs.add(spec(i));
    }
    TestingCluster cluster = new TestingCluster(specs);
    try {
      cluster.start();
    } catch (Exception e) {
      throw new IllegalStateException("could not start an in-process ZooKeeper ensemble", e);
    }
    return cluster;
  }

  /** A plain Curator client for the test's own look at the store (not a contender). */
  static CuratorFramework admin(String connectString) {
    CuratorFramework admin =
        CuratorFrameworkFactory.newClient(
            connectString, 10_000, 10_000, new RetryNTimes(20, 100));
    admin.start();
    try {
      if (!admin.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
        throw new IllegalStateException("no connection to ZooKeeper at " + connectString);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    return admin;
  }

  /** Creates a chroot path (ZooKeeper does not create a client's chroot). */
  static void createPath(CuratorFramework admin, String path) {
    try {
      if (admin.checkExists().forPath(path) == null) {
        admin.create().creatingParentsIfNeeded().forPath(path);
      }
    } catch (Exception e) {
      throw new IllegalStateException("could not create " + path, e);
    }
  }

  static String uri(String hostPorts, String chroot, Duration sessionTimeout) {
    return "zookeeper://" + hostPorts + chroot + "?sessionTimeout=" + sessionTimeout.toMillis() + "ms";
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
