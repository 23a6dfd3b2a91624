package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseException;
import io.leasehold.LeaseSettings;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.Tenure;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.data.Stat;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What is particular to ZooKeeper, against a real server: store answers, sessions, znodes. */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperBackendTest {

  private static final String CHROOT = "/backend";
  private static final Duration TTL = Duration.ofSeconds(1);
  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(CHROOT);

  private static ZooKeeperBackend open() {
    return (ZooKeeperBackend) LeaseBackend.open(
        ZooKeeperServers.uri("127.0.0.1:" + zk.server().getPort(), CHROOT, TTL));
  }

  private static Stat holderNode(String lease) throws Exception {
    return zk.admin().checkExists().forPath(CHROOT + ZNodes.holderNode(lease));
  }

  @Test
  void theProviderServesTheSchemeAndReportsTheCanonicalUri() {
    try (LeaseBackend backend = LeaseBackend.open(
        "zookeeper://127.0.0.1:" + zk.server().getPort() + CHROOT + "/?sessionTimeout=PT1S")) {
      assertThat(backend).isInstanceOf(ZooKeeperBackend.class);
      assertThat(backend.uri())
          .isEqualTo("zookeeper://127.0.0.1:" + zk.server().getPort() + CHROOT + "?sessionTimeout=1000ms");
    }
  }

  @Test
  void aTtlAboveTheSessionTimeoutIsRefusedWhenTheLeaseIsMade() {
    try (ZooKeeperBackend backend = open()) {
      LeaseSettings tooLong = LeaseSettings.builder("too-long", "o").ttl(TTL.plusMillis(1)).build();
      assertThatThrownBy(() -> backend.newLease(tooLong))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("ttl must be at most the ZooKeeper session timeout of 1000 ms")
          .hasMessageContaining("was 1001 ms");
      Lease fine = backend.newLease(SuiteSettings.forTtl("too-long", "o", TTL).build());
      assertThat(fine.acquire().join()).isTrue();
    }
  }

  @Test
  void allLeasesOfABackendAreEphemeralNodesOfItsOneSession() throws Exception {
    try (ZooKeeperBackend backend = open()) {
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        Lease lease = backend.newLease(SuiteSettings.forTtl("session-" + i, "o", TTL).build());
        assertThat(lease.acquire().join()).isTrue();
        leases.add(lease);
      }
      Set<Long> owners = new HashSet<>();
      for (Lease lease : leases) {
        Stat stat = holderNode(lease.name());
        owners.add(stat.getEphemeralOwner());
        assertThat(lease.fencingToken()).hasValue(stat.getCzxid());
      }
      assertThat(owners).containsExactly(backend.zooKeeper().getSessionId());
    }
    assertThat(holderNode("session-0")).as("closing the backend releases").isNull();
  }

  @Test
  void aRetriedAcquireIsTheSameTenureAndALaterCallReplacesIt() {
    try (ZooKeeperBackend backend = open()) {
      ZooKeeperLeaseStore store = backend.store();
      HolderId holder = HolderId.newIncarnation("retrier");
      long first = granted(store.acquire(request("retry", holder, 1)));

      assertThat(granted(store.acquire(request("retry", holder, 1))))
          .as("the same request again (its first reply lost)").isEqualTo(first);
      long second = granted(store.acquire(request("retry", holder, 2)));
      assertThat(second).as("a later acquire call: a new tenure").isGreaterThan(first);
      assertThat(store.acquire(request("retry", holder, 1)).join())
          .as("a late copy of the older request")
          .isInstanceOf(AcquireResult.HeldElsewhere.class);
      assertThat(store.acquire(request("retry", HolderId.newIncarnation("retrier"), 3)).join())
          .as("another incarnation of the same owner")
          .isEqualTo(new AcquireResult.HeldElsewhere(holder.toString()));

      store.release(new Tenure("retry", holder, 1, first, TTL)).join();
      assertThat(granted(store.acquire(request("retry", holder, 2))))
          .as("a release of the replaced tenure leaves the new one").isEqualTo(second);
    }
  }

  @Test
  void aLateReleaseCannotDeleteANodeRecreatedAtTheSamePathAndVersion() throws Exception {
    try (ZooKeeperBackend second = open(); ZooKeeperBackend late = open()) {
      HolderId a = HolderId.newIncarnation("a");
      long tokenOfA;
      try (ZooKeeperBackend first = open()) {
        tokenOfA = granted(first.store().acquire(request("recreated", a, 1)));
      } // A's session ends, and its holder node with it (an operator's delete would block the
      // name until A stopped: see ZooKeeperStoreDeleteTest)
      HolderId b = HolderId.newIncarnation("b");
      long tokenOfB = granted(second.store().acquire(request("recreated", b, 1)));
      assertThat(holderNode("recreated").getVersion()).as("same node version as A's had").isZero();

      late.store().release(new Tenure("recreated", a, 1, tokenOfA, TTL)).join();

      assertThat(holderNode("recreated").getCzxid()).isEqualTo(tokenOfB);
    }
  }


  @Test
  void aGrantThatNoLeaseRenewsIsReapedAfterItsTtl() throws Exception {
    try (ZooKeeperBackend backend = open()) {
      granted(backend.store().acquire(request("orphan", HolderId.newIncarnation("o"), 1)));
      assertThat(holderNode("orphan")).isNotNull();
      Awaitility.await("the orphaned holder node is deleted")
          .atMost(TTL.multipliedBy(10))
          .pollInterval(Duration.ofMillis(20))
          .until(() -> holderNode("orphan") == null);
      assertThat(backend.zooKeeper().getState().isAlive()).as("the session lives on").isTrue();
    }
  }

  @Test
  void aMissingChrootIsReportedAsSuch() {
    try (LeaseBackend backend = LeaseBackend.open(
        ZooKeeperServers.uri("127.0.0.1:" + zk.server().getPort(), "/no-such-chroot", TTL))) {
      Lease lease = backend.newLease(SuiteSettings.forTtl("x", "o", TTL).build());
      assertThatThrownBy(() -> lease.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseException.class)
          .hasMessageContaining("chroot")
          .hasMessageContaining("does not exist");
    }
  }

  private static AcquireRequest request(String name, HolderId holder, long requestId) {
    return new AcquireRequest(name, holder, requestId, TTL, System.nanoTime());
  }

  private static long granted(java.util.concurrent.CompletableFuture<AcquireResult> answer) {
    AcquireResult result = answer.join();
    assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
    return ((AcquireResult.Acquired) result).token();
  }
}
