package io.leasehold.zookeeper;

import io.leasehold.testkit.ProcessPauseSuite;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * Scenario (d) with a real pause: the holder is a child JVM frozen with {@code SIGSTOP}, so every
 * one of its threads stops, ZooKeeper's own heartbeat threads included, and its session expires
 * on a real server.
 */
@Tag("integration")
class ZooKeeperProcessPauseTest extends ProcessPauseSuite {

  private static final String CHROOT = "/process-pause";
  private static TestingServer server;
  private static CuratorFramework admin;

  @BeforeAll
  static void startServer() {
    server = ZooKeeperServers.standalone();
    admin = ZooKeeperServers.admin(server.getConnectString());
    ZooKeeperServers.createPath(admin, CHROOT);
  }

  @AfterAll
  static void stopServer() {
    ZooKeeperServers.closeQuietly(admin);
    ZooKeeperServers.closeQuietly(server);
  }

  @Override
  protected String backendUri() {
    return ZooKeeperServers.uri("127.0.0.1:" + server.getPort(), CHROOT, ttl());
  }

  @Override
  protected Duration ttl() {
    return Duration.ofSeconds(1);
  }
}
