package io.leasehold.zookeeper;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * The whole contract suite against a real ZooKeeper server (in process), on real time, with a
 * 1 s TTL and a 1 s session timeout; every contender reaches the server through a TCP proxy.
 */
@Tag("integration")
class ZooKeeperContractTest extends LeaseContractSuite {

  static final Duration TTL = Duration.ofSeconds(1);

  private static TestingServer server;
  private static CuratorFramework admin;

  @BeforeAll
  static void startServer() {
    server = ZooKeeperServers.standalone();
    admin = ZooKeeperServers.admin(server.getConnectString());
    ZooKeeperServers.createPath(admin, ZooKeeperFixture.CHROOT);
  }

  @AfterAll
  static void stopServer() {
    ZooKeeperServers.closeQuietly(admin);
    ZooKeeperServers.closeQuietly(server);
  }

  @Override
  protected ContractFixture createFixture() {
    return new ZooKeeperFixture(
        new InetSocketAddress("127.0.0.1", server.getPort()), admin, TTL);
  }
}
