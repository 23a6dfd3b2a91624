package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.maintenance.StatusResponse;
import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Store failover: a 3-member etcd cluster on loopback loses its leader, which is also the member
 * the holder's backend is connected to, while a lease is held.
 *
 * <p>What happens, pinned down here: the lease is <b>held through</b>. The remaining members elect
 * a new leader within a few election timeouts; the new leader re-arms every etcd lease to its full
 * TTL; the backend's gRPC channel moves to a surviving member and the next keep-alives succeed
 * within the holder's safe window. So no {@code onLost}, the same fencing token, and nobody else
 * can acquire the lease meanwhile.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdFailoverTest {

  /** A TTL with room for an election (about 100-300 ms here) inside the safe window. */
  private static final Duration TTL = Duration.ofSeconds(2);

  private EtcdCluster cluster;

  @BeforeEach
  void startCluster() {
    cluster = EtcdCluster.start(3);
  }

  @AfterEach
  void stopCluster() {
    cluster.close();
  }

  @Test
  void aLeaseIsHeldThroughTheLossOfTheLeaderItsClientWasConnectedTo() throws Exception {
    int leader = leader();
    // The holder knows only the leader first, then the others: its channel starts on the leader.
    String holderUri = "etcd://127.0.0.1:" + cluster.clientAddress(leader).getPort() + ","
        + otherEndpoints(leader);
    try (EtcdBackend holderSide = EtcdBackend.open(holderUri);
        Lease held = holderSide.newLease(SuiteSettings.forTtl("failover", "holder", TTL)
            .operationTimeout(TTL.dividedBy(5)).build())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      held.onLost(losses::add);
      assertThat(held.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = held.fencingToken().orElseThrow();

      cluster.kill(leader);

      try (EtcdBackend otherSide = EtcdBackend.open("etcd://" + otherEndpoints(leader));
          Lease contender =
              otherSide.newLease(SuiteSettings.forTtl("failover", "contender", TTL).build())) {
        Awaitility.await("a new etcd leader among the survivors")
            .atMost(Duration.ofSeconds(20))
            .pollInterval(Duration.ofMillis(50))
            .until(() -> leaderAmongSurvivors(leader));
        long start = System.nanoTime();
        Awaitility.await("three TTLs after the leader died")
            .atMost(TTL.multipliedBy(10))
            .pollInterval(Duration.ofMillis(20))
            .until(() -> {
              assertThat(held.checkAlive()).as("checkAlive through the failover").isTrue();
              return System.nanoTime() - start > TTL.multipliedBy(3).toNanos();
            });
        assertThat(contender.acquire().get(10, TimeUnit.SECONDS))
            .as("another owner's acquire on the surviving members")
            .isFalse();
        assertThat(losses).as("onLost calls").isEmpty();
        assertThat(held.acquire().get(10, TimeUnit.SECONDS)).as("confirming acquire").isTrue();
        assertThat(held.fencingToken()).hasValue(token);
      }
    }
  }

  private String otherEndpoints(int except) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < cluster.size(); i++) {
      if (i != except) {
        s.append(s.length() > 0 ? "," : "").append("127.0.0.1:").append(cluster.clientAddress(i).getPort());
      }
    }
    return s.toString();
  }

  /** {@return the index of the current leader} */
  private int leader() throws Exception {
    try (Client admin = Client.builder().endpoints(cluster.endpoint(0)).build()) {
      Awaitility.await("a leader").atMost(Duration.ofSeconds(20)).until(() -> status(admin, 0).getLeader() != 0);
      long leaderId = status(admin, 0).getLeader();
      for (int i = 0; i < cluster.size(); i++) {
        if (status(admin, i).getHeader().getMemberId() == leaderId) {
          return i;
        }
      }
    }
    throw new AssertionError("no member is the leader");
  }

  private boolean leaderAmongSurvivors(int dead) throws Exception {
    int survivor = dead == 0 ? 1 : 0;
    try (Client admin = Client.builder().endpoints(cluster.endpoint(survivor)).build()) {
      long leaderId = status(admin, survivor).getLeader();
      for (int i = 0; i < cluster.size(); i++) {
        if (i != dead && status(admin, i).getHeader().getMemberId() == leaderId) {
          return true;
        }
      }
      return false;
    } catch (Exception e) {
      return false;
    }
  }

  private StatusResponse status(Client admin, int member) throws Exception {
    return admin.getMaintenanceClient().statusMember(cluster.endpoint(member)).get(5, TimeUnit.SECONDS);
  }
}
