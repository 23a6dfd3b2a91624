package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The managed etcd and ZooKeeper clusters the nemesis hits: they elect a leader, serve leases,
 * an operator's delete removes a held lease's record (and says when there was none), a killed
 * member rejoins, and a ZooKeeper server cut off from its peers really is cut off (the others
 * elect a leader without it), so every byte among the servers crosses the links.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
@Tag("integration")
class StoreClustersTest {

  private static final Duration STARTUP = Duration.ofSeconds(120);

  private static List<Integer> directPorts(StoreCluster cl) {
    List<Integer> ports = new ArrayList<>();
    for (int j = 0; j < cl.size(); j++) {
      ports.add(cl.clientAddress(j).getPort());
    }
    return ports;
  }

  /** The URI with the members' real addresses instead of links on 127.0.0.1. */
  private static String directUri(StoreCluster cl, long ttlMillis) {
    String uri = cl.leaseUri(directPorts(cl), ttlMillis);
    for (int j = 0; j < cl.size(); j++) {
      uri = uri.replaceFirst("127\\.0\\.0\\.1:" + cl.clientAddress(j).getPort(),
          cl.clientAddress(j).getHostString() + ":" + cl.clientAddress(j).getPort());
    }
    return uri;
  }

  private static void holdDeleteAndRejoin(StoreCluster cl) throws Exception {
    cl.start();
    await().atMost(STARTUP).until(() -> cl.leader().isPresent());
    try (LeaseBackend backend = LeaseBackend.open(directUri(cl, 4000));
        Lease lease = backend.newLease(LeaseSettings.builder("lease-0", "t").ttl(Duration.ofSeconds(4)).build())) {
      await().atMost(Duration.ofSeconds(60)).ignoreExceptions()
          .until(() -> lease.acquire().get(10, TimeUnit.SECONDS));
      assertThat(cl.deleteLease("lease-0")).as("a held lease's record is deleted").isTrue();
      assertThat(cl.deleteLease("lease-0")).as("nothing left to delete").isFalse();
      await().atMost(Duration.ofSeconds(20)).until(() -> !lease.checkAlive());
    }
    int leader = cl.leader().orElseThrow();
    cl.kill(leader);
    assertThat(cl.process(leader)).isNull();
    await().atMost(STARTUP).until(() -> cl.leader().filter(l -> l != leader).isPresent());
    cl.restart(leader);
    await().atMost(STARTUP).until(() -> cl.answers(leader));
  }

  @Test
  void etcdServesLeasesTakesAnOperatorDeleteAndRejoinsAKilledLeader(@TempDir Path dir) throws Exception {
    try (EtcdCluster etcd = new EtcdCluster(dir.resolve("etcd"))) {
      assertThat(etcd.canIsolate()).isFalse();
      holdDeleteAndRejoin(etcd);
    }
  }

  @Test
  void zooKeeperServesLeasesTakesAnOperatorDeleteAndRejoinsAKilledLeader(@TempDir Path dir) throws Exception {
    try (ZooKeeperCluster zk = new ZooKeeperCluster(dir.resolve("zk"), System.getProperty("java.class.path"),
        new Clocks(dir.resolve("clock")))) {
      holdDeleteAndRejoin(zk);
    }
  }

  @Test
  void aZooKeeperLeaderCutOffFromItsPeersIsReplaced(@TempDir Path dir) {
    try (ZooKeeperCluster zk = new ZooKeeperCluster(dir.resolve("zk"), System.getProperty("java.class.path"),
        new Clocks(dir.resolve("clock")))) {
      zk.start();
      await().atMost(STARTUP).until(() -> zk.leader().isPresent() && zk.answers(0) && zk.answers(1) && zk.answers(2));
      int leader = zk.leader().orElseThrow();
      zk.cutPeers(leader);
      // Only if no byte among the servers bypasses the links do the other two lose the leader.
      await().atMost(Duration.ofSeconds(60)).until(() -> zk.leader().filter(l -> l != leader).isPresent());
      await().atMost(Duration.ofSeconds(60)).until(() -> !zk.answers(leader));
      zk.healPeers(leader);
      await().atMost(STARTUP).until(() -> zk.answers(leader));
    }
  }
}
