package io.leasehold.zookeeper;

import io.leasehold.LeaseBackend;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.TcpProxy;
import io.leasehold.testkit.TimeControl;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;

/**
 * The contract suite's fixture for ZooKeeper: one real server, shared by the tests of a class;
 * each contender is a backend of its own (its own session) that reaches the server through its own
 * {@link TcpProxy}, with its timers and callbacks behind a {@link ProcessGate}.
 *
 * <ul>
 *   <li>partition: the proxy black-holes the contender's traffic both ways;</li>
 *   <li>crash: the contender's threads stop for good and its traffic is black-holed, so its
 *       session expires on the server; nothing is released (a clean ZooKeeper close would delete
 *       its ephemeral nodes at once, which is a release, not a crash);</li>
 *   <li>pause: timers and callbacks are frozen, and the traffic black-holed, so that Curator's
 *       own threads cannot keep the session alive either (the real {@code SIGSTOP} test is
 *       {@link ZooKeeperProcessPauseTest}).</li>
 * </ul>
 */
final class ZooKeeperFixture implements ContractFixture {

  static final String CHROOT = "/contract";
  private static final AtomicInteger CONTENDERS = new AtomicInteger();
  private static final Duration RECONNECT_PATIENCE = Duration.ofSeconds(10);

  private final InetSocketAddress server;
  private final CuratorFramework admin;
  private final Duration ttl;

  ZooKeeperFixture(InetSocketAddress server, CuratorFramework admin, Duration ttl) {
    this.server = server;
    this.admin = admin;
    this.ttl = ttl;
  }

  @Override
  public Contender newContender() {
    return new ZooKeeperContender(server, ttl);
  }

  @Override
  public TimeControl time() {
    return TimeControl.realTime();
  }

  @Override
  public Duration ttl() {
    return ttl;
  }

  @Override
  public void revokeInStore(String leaseName) {
    try {
      admin.delete().forPath(CHROOT + ZNodes.holderNode(leaseName));
    } catch (KeeperException.NoNodeException e) {
      // nobody holds it
    } catch (Exception e) {
      throw new IllegalStateException("could not delete the holder node of " + leaseName, e);
    }
  }

  @Override
  public boolean observesLeases() {
    return true;
  }

  @Override
  public boolean attachesKeys() {
    return true;
  }

  @Override
  public void close() {}

  static final class ZooKeeperContender extends ProxiedContender {
    private final ZooKeeperBackend backend;

    ZooKeeperContender(InetSocketAddress server, Duration sessionTimeout) {
      super("zk-contender-" + CONTENDERS.incrementAndGet(), List.of(server));
      String uri = ZooKeeperServers.uri("127.0.0.1:" + proxy().port(), CHROOT, sessionTimeout);
      backend = ZooKeeperBackend.open(ZooKeeperUri.parse(uri), runtime());
    }

    @Override
    public LeaseBackend backend() {
      return backend;
    }

    TcpProxy proxy() {
      return proxies().get(0);
    }

    /**
     * Waits until the client is connected again. A real ZooKeeper client reconnects on its own
     * schedule (a random back-off of up to a second between attempts, and a new session if the
     * old one expired meanwhile); the suite expects the next operation after a heal to reach the
     * store.
     */
    @Override
    protected void afterHeal() {
      if (!backend.awaitConnected(RECONNECT_PATIENCE)) {
        throw new AssertionError(
            "the ZooKeeper client did not reconnect within " + RECONNECT_PATIENCE + " of the heal");
      }
    }

    @Override
    protected void abandon() {
      // Its traffic is black-holed: the session expires on the server, as a dead process's would.
    }

    /**
     * The crashed process's connections die with it (they are reset first); only then is its
     * client closed, so that its session cannot say goodbye to the server.
     */
    @Override
    protected void closeAfterCrash() {
      backend.close();
    }
  }
}
