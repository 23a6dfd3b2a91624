package io.leasehold.etcd;

import io.etcd.jetcd.Client;
import io.leasehold.LeaseBackend;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TimeControl;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The contract suite's fixture on a real etcd. Each contender is its own process as far as the
 * store can tell: its own jetcd client, reaching etcd through its own {@link TcpProxy}, and its
 * own timer and callback threads behind a {@link ProcessGate}.
 *
 * <ul>
 *   <li>partition: the proxy black-holes the client's traffic both ways;</li>
 *   <li>crash: the gate stops every timer and the client is closed without a release or revoke;
 *       etcd keeps the session lease and its keys until the TTL runs out;</li>
 *   <li>pause: the gate freezes the timers and callbacks (keep-alives included) <em>and</em> the
 *       proxy black-holes the traffic, so that jetcd's own threads can neither keep anything
 *       alive nor deliver a watch event; on resume, what fell due runs before traffic flows again,
 *       as in a process that wakes up before its sockets are read. (The honest whole-JVM freeze is
 *       {@link EtcdProcessPauseTest}.)</li>
 * </ul>
 */
final class EtcdFixture implements ContractFixture {

  /**
   * etcd lease TTLs are whole seconds, 1 s at least. 2 s gives the suite's operation timeout
   * (TTL/5) 400 ms: every acquire is a Raft write with an fsync, and at 1 s (200 ms) a busy
   * two-core machine made one acquire in a thousand time out.
   */
  static final Duration TTL = Duration.ofSeconds(2);

  private static final AtomicInteger CONTENDERS = new AtomicInteger();

  private final EtcdCluster cluster;
  private final Client admin;

  EtcdFixture(EtcdCluster cluster, Client admin) {
    this.cluster = cluster;
    this.admin = admin;
  }

  @Override
  public Contender newContender() {
    return new EtcdContender(cluster);
  }

  @Override
  public TimeControl time() {
    return TimeControl.realTime();
  }

  @Override
  public Duration ttl() {
    return TTL;
  }

  @Override
  public void revokeInStore(String leaseName) {
    try {
      admin
          .getKVClient()
          .delete(EtcdLeaseStore.bytes(EtcdUri.DEFAULT_NAMESPACE + "/leases/" + leaseName))
          .get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("could not delete the record of " + leaseName + " in etcd", e);
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

  static final class EtcdContender extends ProxiedContender {
    private final EtcdBackend backend;

    EtcdContender(EtcdCluster cluster) {
      super("etcd-contender-" + CONTENDERS.incrementAndGet(), List.of(cluster.clientAddress(0)));
      backend = EtcdBackend.open("etcd://127.0.0.1:" + proxies().get(0).port(), runtime());
      // A process that has been up for a while is connected and has its session lease: the
      // suite's first acquire should not pay for the TCP and HTTP/2 set-up and the grant within
      // its operation timeout.
      backend.connected().orTimeout(10, TimeUnit.SECONDS).join();
      backend.warmUp(SuiteSettings.forTtl("warm-up", "warm-up", TTL).build())
          .orTimeout(10, TimeUnit.SECONDS)
          .join();
    }

    @Override
    public LeaseBackend backend() {
      return backend;
    }

    @Override
    protected void abandon() {
      backend.closeAbruptly();
    }
  }
}
