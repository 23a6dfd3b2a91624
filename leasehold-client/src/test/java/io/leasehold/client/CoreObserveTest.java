package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An observer on the core resumes from the revision after its last event when its connections are
 * reset: the changes made meanwhile arrive in order, with no GAP (the core still has them).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class CoreObserveTest {

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = CoreFixture.startCluster("observe");
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void anObserverWhoseConnectionsAreResetResumesFromItsRevisionAndMissesNothing() {
    CoreFixture fixture = new CoreFixture(cluster);
    try {
      CoreFixture.CoreContender watcher = (CoreFixture.CoreContender) fixture.newContender();
      CoreFixture.CoreContender holders = (CoreFixture.CoreContender) fixture.newContender();
      List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
      watcher.backend().observe("resumed", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      Lease a = holders.backend().newLease(settings("owner-a"));
      Lease b = holders.backend().newLease(settings("owner-b"));

      // Cut: the watch stream stalls; then every connection is reset, so the client must reconnect
      // and ask for the history from the revision after its last event.
      watcher.cutOff();
      assertThat(a.acquire().join()).isTrue();
      long tokenOfA = a.fencingToken().orElseThrow();
      a.release().join();
      assertThat(b.acquire().join()).isTrue();
      long tokenOfB = b.fencingToken().orElseThrow();
      watcher.resetConnections();
      watcher.heal();

      await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(seen).as("events observed").hasSizeGreaterThanOrEqualTo(4));
      assertThat(seen)
          .extracting(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
          .containsExactly(
              "CURRENT free",
              "ACQUIRED owner-a " + tokenOfA,
              "RELEASED owner-a " + tokenOfA,
              "ACQUIRED owner-b " + tokenOfB);
    } finally {
      fixture.close();
    }
  }

  /**
   * A holder whose backend closes ends its session itself (holder_closing): that is a release by
   * the holder, and an observer must be told RELEASED. It was told REVOKED — what an operator's
   * revoke looks like — because the core gave both the cause "session revoked" (seen as a flake of
   * ShutdownReleaseTest under load, where a release timed out and the close then ended the session).
   */
  @Test
  void aSessionClosedByItsHolderIsReportedAsReleased() throws Exception {
    CoreFixture fixture = new CoreFixture(cluster);
    CoreClient holder = new CoreClient(CoreFixture.endpoints(cluster.peers()), Duration.ofSeconds(5));
    try {
      CoreFixture.CoreContender watcher = (CoreFixture.CoreContender) fixture.newContender();
      List<LeaseEvent> seen = new CopyOnWriteArrayList<>();
      watcher.backend().observe("closed-by-holder", seen::add);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() == 1);
      GrantRequest grant =
          GrantRequest.newBuilder().setCall(holder.newCall()).setOwner("owner-a").setTtlMillis(60_000).build();
      long session = holder.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(10, TimeUnit.SECONDS).getSessionId();
      AcquireRequest acquire =
          AcquireRequest.newBuilder().setCall(holder.newCall()).setName("closed-by-holder")
              .setHolder("owner-a#1").setRequestId(1).setSessionId(session).build();
      AcquireResponse acquired = holder.<AcquireResponse>call((s, o) -> s.acquire(acquire, o)).get(10, TimeUnit.SECONDS);
      assertThat(acquired.getAcquired()).isTrue();

      RevokeRequest close =
          RevokeRequest.newBuilder().setCall(holder.newCall()).setSessionId(session).setHolderClosing(true).build();
      holder.<RevokeResponse>call((s, o) -> s.revoke(close, o)).get(10, TimeUnit.SECONDS);

      await().atMost(Duration.ofSeconds(30)).until(() -> seen.size() >= 3);
      assertThat(seen)
          .extracting(e -> e.type() + " " + e.holding().map(h -> h.owner()).orElse("free"))
          .containsExactly("CURRENT free", "ACQUIRED owner-a", "RELEASED owner-a");
    } finally {
      holder.close();
      fixture.close();
    }
  }

  /** A longer TTL than the contract suite's: the holders' acquires are not what is tested here. */
  private static LeaseSettings settings(String owner) {
    return SuiteSettings.forTtl("resumed", owner, Duration.ofSeconds(10)).build();
  }
}
