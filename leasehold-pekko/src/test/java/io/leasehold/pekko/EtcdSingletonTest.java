package io.leasehold.pekko;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.testkit.TcpProxy;
import org.apache.pekko.actor.ActorSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pekko's Cluster Singleton with its lease on a real etcd: node A reaches etcd through a TCP
 * proxy of its own and is cut off from it and from the Pekko cluster; B downs A and takes the
 * singleton over only after A's singleton stopped.
 */
@Timeout(90)
@Tag("integration")
class EtcdSingletonTest {

  private final EtcdServer etcd = EtcdServer.start();
  private final TcpProxy proxyOfA = TcpProxy.start(etcd.clientAddress());
  private final TestCluster cluster = new TestCluster("etcd-singleton");

  @AfterEach
  void stop() {
    cluster.close();
    proxyOfA.close();
    etcd.close();
  }

  @Test
  void singletonOnEtcdMovesOnlyAfterTheCutOffHolderStopped() {
    TenureLog log = new TenureLog();
    ActorSystem a = cluster.start(TestCluster.config("etcd://127.0.0.1:" + proxyOfA.port(), ""));
    ActorSystem b = cluster.start(TestCluster.config(etcd.uri(), ""));
    cluster.awaitUp();
    SingletonWorker.startManager(a, log, "A");
    SingletonWorker.startManager(b, log, "B");
    await("the singleton started on A")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "A") > 0);

    proxyOfA.blackhole();
    cluster.partition(a);
    cluster.down(b, a);

    await("the singleton started on B")
        .atMost(TestCluster.PATIENCE)
        .until(() -> log.count(TenureLog.Kind.ACT, "B") > 5);
    assertThat(log.violations()).as("history:\n%s", log).isEmpty();
    assertThat(log.startTokens("B").get(0)).isGreaterThan(log.startTokens("A").get(0));
  }
}
