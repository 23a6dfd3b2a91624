package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An observer on the core resumes from the revision after its last event when its connections are
 * reset: the changes made meanwhile arrive in order, with no GAP (the core still has them).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
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

  /** A longer TTL than the contract suite's: the holders' acquires are not what is tested here. */
  private static LeaseSettings settings(String owner) {
    return SuiteSettings.forTtl("resumed", owner, Duration.ofSeconds(10)).build();
  }
}
