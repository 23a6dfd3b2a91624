package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.Ticker;
import io.leasehold.testkit.ExclusivityChecker;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the etcd backend does beyond the contract: its keys, its sessions, its limits. */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdBackendTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  private static EtcdCluster cluster;
  private static Client admin;

  @BeforeAll
  static void startEtcd() {
    cluster = EtcdCluster.start(1);
    admin = Client.builder().endpoints(cluster.endpoint(0)).build();
  }

  @AfterAll
  static void stopEtcd() {
    if (admin != null) {
      admin.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void theRecordIsAKeyUnderTheNamespaceWhoseCreateRevisionIsTheToken() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(cluster.backendUri() + "?namespace=/team-a");
        Lease lease = backend.newLease(SuiteSettings.forTtl("jobs/compactor", "node-1", TTL).build())) {
      assertThat(backend).isInstanceOf(EtcdBackend.class);
      ((EtcdBackend) backend).connected().get(10, TimeUnit.SECONDS);
      assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();

      KeyValue record = get("/team-a/leases/jobs/compactor");
      assertThat(record.getCreateRevision()).isEqualTo(lease.fencingToken().orElseThrow());
      assertThat(record.getValue().toString(StandardCharsets.UTF_8))
          .startsWith(lease.holder().toString() + "\n");
      assertThat(record.getLease()).isNotZero();

      lease.release().get(10, TimeUnit.SECONDS);
      assertThat(admin.getKVClient().get(bytes("/team-a/leases/jobs/compactor")).get(10, TimeUnit.SECONDS).getKvs())
          .isEmpty();
    }
  }

  @Test
  void leasesWithTheSameTtlShareOneEtcdLeaseAndAnotherTtlGetsItsOwn() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri())) {
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        leases.add(backend.newLease(SuiteSettings.forTtl("shared-" + i, "node-1", TTL).build()));
      }
      Lease longer = backend.newLease(SuiteSettings.forTtl("shared-longer", "node-1", TTL.multipliedBy(2)).build());
      for (Lease l : leases) {
        assertThat(l.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      }
      assertThat(longer.acquire().get(10, TimeUnit.SECONDS)).isTrue();

      Set<Long> etcdLeases = new HashSet<>();
      for (int i = 0; i < 20; i++) {
        etcdLeases.add(get(backend.keyOf("shared-" + i)).getLease());
      }
      assertThat(etcdLeases).as("etcd leases of 20 held leases with one TTL").hasSize(1);
      long longerLease = get(backend.keyOf("shared-longer")).getLease();
      assertThat(longerLease).isNotIn(etcdLeases);
      assertThat(admin.getLeaseClient().timeToLive(longerLease, io.etcd.jetcd.options.LeaseOption.DEFAULT)
              .get(10, TimeUnit.SECONDS).getGrantedTTL())
          .isEqualTo(4);

      // Held for several TTLs on that one keep-alive.
      long start = System.nanoTime();
      Awaitility.await("two TTLs")
          .atMost(TTL.multipliedBy(5))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> {
            for (Lease l : leases) {
              assertThat(l.checkAlive()).isTrue();
            }
            return System.nanoTime() - start > TTL.multipliedBy(2).toNanos();
          });
    }
  }

  @Test
  void aFractionalTtlIsRoundedUpToWholeSecondsInTheStore() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri());
        Lease lease = backend.newLease(SuiteSettings.forTtl("rounded", "node-1", Duration.ofMillis(1500)).build())) {
      assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long etcdLease = get(backend.keyOf("rounded")).getLease();
      assertThat(admin.getLeaseClient().timeToLive(etcdLease, io.etcd.jetcd.options.LeaseOption.DEFAULT)
              .get(10, TimeUnit.SECONDS).getGrantedTTL())
          .as("etcd TTL for 1.5 s")
          .isEqualTo(2);
    }
  }

  @Test
  void aTtlBelowOneSecondIsRejectedWithTheFieldAndTheMinimum() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri())) {
      assertThatThrownBy(() -> backend.newLease(
              SuiteSettings.forTtl("short", "node-1", Duration.ofMillis(999)).build()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("ttl must be at least 1 s on etcd")
          .hasMessageContaining("999 ms");
    }
  }

  @Test
  void revokingTheSessionLeaseInEtcdEndsEveryTenureOnIt() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        Lease l = backend.newLease(SuiteSettings.forTtl("revoked-session-" + i, "node-1", TTL).build());
        l.onLost(losses::add);
        assertThat(l.acquire().get(10, TimeUnit.SECONDS)).isTrue();
        leases.add(l);
      }
      long session = get(backend.keyOf("revoked-session-0")).getLease();

      admin.getLeaseClient().revoke(session).get(10, TimeUnit.SECONDS);

      Awaitility.await("every tenure on the revoked session is lost")
          .atMost(TTL.multipliedBy(3))
          .until(() -> losses.size() == 3);
      assertThat(losses).allSatisfy(l -> assertThat(l.kind()).isEqualTo(LeaseLost.Kind.REVOKED));
      for (Lease l : leases) {
        assertThat(l.checkAlive()).isFalse();
      }
      // The next acquire gets a fresh session lease.
      assertThat(leases.get(0).acquire().get(10, TimeUnit.SECONDS)).isTrue();
      assertThat(get(backend.keyOf("revoked-session-0")).getLease()).isNotEqualTo(session);
    }
  }

  @Test
  void aKeyOverwrittenByAnotherWriterIsATakeOver() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri());
        Lease lease = backend.newLease(SuiteSettings.forTtl("overwritten", "node-1", TTL).build())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      lease.onLost(losses::add);
      assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();

      admin.getKVClient().put(bytes(backend.keyOf("overwritten")), bytes("someone-else#0123456789abcdef\n1"))
          .get(10, TimeUnit.SECONDS);

      Awaitility.await("the overwrite is reported").atMost(TTL.multipliedBy(3)).until(() -> losses.size() == 1);
      assertThat(losses.get(0).kind()).isEqualTo(LeaseLost.Kind.TAKEN_OVER);
      assertThat(lease.checkAlive()).isFalse();
    }
  }

  /**
   * {@code etcdctl del} of a held record while the holder's watch is silent: the guard keeps the
   * name from everyone else, the periodic check of held records tells the holder, and its release
   * (after its handlers ran) frees the name.
   */
  @Test
  void anEtcdctlDelReachesTheHolderWithoutItsWatchAndNobodyElseGetsTheNameBeforeItStopped() throws Exception {
    try (EtcdBackend holder = connected(cluster.backendUri());
        EtcdBackend other = connected(cluster.backendUri())) {
      Lease a = holder.newLease(SuiteSettings.forTtl("deleted-record", "node-1", TTL).build());
      Lease b = other.newLease(SuiteSettings.forTtl("deleted-record", "node-2", TTL).acquireRetries(3).build());
      LossRecorder lossesOfA = new LossRecorder(Ticker.system());
      a.onLost(lossesOfA);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      assertThat(get(holder.guardKeyOf("deleted-record")).getCreateRevision()).isEqualTo(tokenOfA);
      holder.silenceWatch();

      admin.getKVClient().delete(bytes(holder.keyOf("deleted-record"))).get(10, TimeUnit.SECONDS);
      ExclusivityChecker checker = new ExclusivityChecker();
      AtomicLong acquiredByB = new AtomicLong();
      Awaitility.await("node-2 acquires")
          .atMost(TTL.multipliedBy(5))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> {
            checker.sample(a);
            checker.sample(b);
            if (b.acquire().get(10, TimeUnit.SECONDS)) {
              acquiredByB.set(System.nanoTime());
              return true;
            }
            return false;
          });
      checker.sample(b);
      checker.sample(a);

      assertThat(a.checkAlive()).as("node-1's checkAlive() once node-2 holds the lease").isFalse();
      assertThat(lossesOfA.count()).as("node-1's onLost calls once node-2 holds the lease").isEqualTo(1);
      assertThat(lossesOfA.first().reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
      assertThat(lossesOfA.first().reason().detail()).contains("periodic check");
      assertThat(acquiredByB.get() - lossesOfA.first().atNanos()).as("node-1's onLost ran first").isPositive();
      assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenOfA);
      checker.assertExclusive();
      assertThat(get(holder.guardKeyOf("deleted-record")).getCreateRevision())
          .as("the guard is node-2's now")
          .isEqualTo(b.fencingToken().orElseThrow());
    }
  }

  @Test
  void acquireWhileHoldingAfterAnEtcdctlDelDoesNotConfirmTheDeletedTenure() throws Exception {
    try (EtcdBackend backend = connected(cluster.backendUri());
        Lease lease = backend.newLease(SuiteSettings.forTtl("confirmed", "node-1", TTL).acquireRetries(3).build())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      lease.onLost(losses::add);
      assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = lease.fencingToken().orElseThrow();
      backend.silenceWatch();

      admin.getKVClient().delete(bytes(backend.keyOf("confirmed"))).get(10, TimeUnit.SECONDS);
      // After the loss, acquire() tries afresh; on a loaded machine that may time out: also fine.
      boolean acquired = lease.acquire().handle((won, error) -> error == null && won).get(10, TimeUnit.SECONDS);

      assertThat(acquired && lease.fencingToken().orElse(0) == token)
          .as("acquire() confirmed tenure %d although its record was deleted", token)
          .isFalse();
      assertThat(losses).extracting(LeaseLost::kind).containsExactly(LeaseLost.Kind.REVOKED);
    }
  }

  @Test
  void badUrisAreRejectedNamingThePart() {
    record Case(String uri, String says) {}
    for (Case c : List.of(
        new Case("etcd://", "names no host"),
        new Case("etcd://127.0.0.1", "is not host:port"),
        new Case("etcd://127.0.0.1:0", "must be 1-65535"),
        new Case("etcd://127.0.0.1:2379,:2380", "is not host:port"),
        new Case("etcd://::1:2379", "must be in brackets"),
        new Case("etcd://127.0.0.1:2379?namespace=leases", "namespace must start with '/'"),
        new Case("etcd://127.0.0.1:2379?namespace=/a/", "not end with '/'"),
        new Case("etcd://127.0.0.1:2379?ttl=5", "unknown option 'ttl'"))) {
      assertThatThrownBy(() -> LeaseBackend.open(c.uri))
          .as(c.uri)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c.says)
          .hasMessageContaining("etcd://host:port");
    }
    assertThat(EtcdUri.parse("etcd://LocalHost:2379,[::1]:2380/").canonical())
        .isEqualTo("etcd://localhost:2379,[::1]:2380");
    assertThat(EtcdUri.parse("etcd://h:1?namespace=/x/y").namespace()).isEqualTo("/x/y");
  }

  /** A backend that has reached etcd: a cold JVM's first round trips are slow, not the point here. */
  /**
   * Nothing listens at the address: the acquire fails as the store being unavailable, with the
   * refused connection as its cause (which the CLI says in words), and does not wait out its
   * timeout on every attempt as if the store were slow ("did not answer").
   */
  @Test
  void anAcquireWhereNoEtcdListensFailsAsRefusedNotAsUnanswered() throws Exception {
    int port;
    try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    try (LeaseBackend backend = LeaseBackend.open("etcd://127.0.0.1:" + port);
        Lease lease = backend.newLease(SuiteSettings.forTtl("nobody-listens", "node-1", Duration.ofSeconds(30)).build())) {
      assertThatThrownBy(() -> lease.acquire().get(1, TimeUnit.MINUTES))
          .hasCauseInstanceOf(io.leasehold.LeaseStoreUnavailableException.class)
          .hasMessageNotContaining("did not answer")
          .satisfies(e -> {
            List<String> causes = new ArrayList<>();
            for (Throwable c = e; c != null; c = c.getCause()) {
              causes.add(String.valueOf(c.getMessage()));
            }
            assertThat(causes).as("the causes").anyMatch(m -> m.contains("Connection refused"));
          });
      assertThat(lease.checkAlive()).isFalse();
    }
  }

  private static EtcdBackend connected(String uri) throws Exception {
    EtcdBackend backend = EtcdBackend.open(uri);
    backend.connected().get(10, TimeUnit.SECONDS);
    return backend;
  }

  private static KeyValue get(String key) throws Exception {
    List<KeyValue> kvs = admin.getKVClient().get(bytes(key), GetOption.DEFAULT).get(10, TimeUnit.SECONDS).getKvs();
    assertThat(kvs).as("record %s in etcd", key).hasSize(1);
    return kvs.get(0);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
