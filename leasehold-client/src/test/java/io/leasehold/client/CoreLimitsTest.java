package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseException;
import io.leasehold.Subscription;
import io.leasehold.server.Limits;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.SuiteSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The client library meets the core's limits (docs/security.md, "Limits"): a watch the core ends
 * or refuses with {@code RESOURCE_EXHAUSTED} is opened again from the revision after the last
 * event seen, so nothing is missed; a write over a limit fails with the core's words.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class CoreLimitsTest {

  private static LocalCluster cluster;

  @BeforeAll
  static void startNode() throws Exception {
    Limits limits = Limits.DEFAULTS.withMaxWatchersPerConnection(1).withMaxKeysPerSession(1);
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "core-limits-"), c -> c.withLimits(limits));
    cluster.awaitLeader(Duration.ofSeconds(60));
  }

  @AfterAll
  static void stopNode() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void anObservationWhoseWatchIsRefusedWatchesAgainFromItsRevisionAndMissesNothing() throws Exception {
    try (LeaseBackend observer = LeaseBackend.open(cluster.uri());
        LeaseBackend holders = LeaseBackend.open(cluster.uri())) {
      List<LeaseEvent> first = new CopyOnWriteArrayList<>();
      Subscription watchingFirst = observer.observe("first", first::add);
      await().atMost(Duration.ofSeconds(60)).until(() -> first.size() == 1);
      // The observer's connection may hold one watch: the second observation's is refused.
      List<LeaseEvent> second = new CopyOnWriteArrayList<>();
      observer.observe("second", second::add);
      await().atMost(Duration.ofSeconds(60)).until(() -> second.size() == 1); // its read: CURRENT

      Lease lease = holders.newLease(SuiteSettings.forTtl("second", "owner-a", Duration.ofSeconds(10)).build());
      assertThat(lease.acquire().join()).isTrue();
      long token = lease.fencingToken().orElseThrow();
      lease.release().join();

      // Once the first watch closes, the second opens, from the revision after its read.
      watchingFirst.cancel();
      await().atMost(Duration.ofSeconds(60)).until(() -> second.size() >= 3);
      assertThat(second)
          .extracting(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
          .containsExactly("CURRENT free", "ACQUIRED owner-a " + token, "RELEASED owner-a " + token);
    }
  }

  @Test
  void aWriteOverALimitFailsWithTheCoresWords() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(cluster.uri())) {
      // Leases of one TTL share one session, which may hold one key here.
      Lease one = backend.newLease(SuiteSettings.forTtl("one", "owner-a", Duration.ofSeconds(10)).build());
      Lease two = backend.newLease(SuiteSettings.forTtl("two", "owner-a", Duration.ofSeconds(10)).build());
      assertThat(one.acquire().join()).isTrue();
      assertThatThrownBy(() -> two.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseException.class)
          .hasMessageContaining("RESOURCE_EXHAUSTED")
          .hasMessageContaining("--max-keys-per-session allows (1)");
      assertThat(two.checkAlive()).isFalse();
      one.release().join();
      assertThat(two.acquire().join()).as("the session has room again").isTrue();
      two.release().join();
    }
  }
}
