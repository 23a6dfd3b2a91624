package io.leasehold.zookeeper;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One real standalone ZooKeeper server for a test class, with an admin client and the class's
 * chroot made: {@code @RegisterExtension static final StandaloneZooKeeper zk = new
 * StandaloneZooKeeper("/observe");}. Started before the class's first test, closed after its last.
 */
final class StandaloneZooKeeper implements BeforeAllCallback, AfterAllCallback {

  private final String chroot;
  private TestingServer server;
  private CuratorFramework admin;

  StandaloneZooKeeper(String chroot) {
    this.chroot = chroot;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    server = ZooKeeperServers.standalone();
    admin = ZooKeeperServers.admin(server.getConnectString());
    ZooKeeperServers.createPath(admin, chroot);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    ZooKeeperServers.closeQuietly(admin);
    ZooKeeperServers.closeQuietly(server);
  }

  /** {@return the running server} */
  TestingServer server() {
    return server;
  }

  /** {@return a client of the server with every right, outside any chroot} */
  CuratorFramework admin() {
    return admin;
  }
}
