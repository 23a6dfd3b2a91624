package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseEvent;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Observing on PostgreSQL beyond the contract suite's clauses: notifications missed while the
 * listening connection was away (cut by a test hook that keeps it away until told) give a GAP
 * with the state read again, never a silent skip; a lease row deleted by an operator is no event
 * until its holder released; the notification payload survives names of any characters.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class PostgresObserveTest {

  private static final Duration TTL = PostgresFixture.TTL;

  private static PostgresServer server;

  @BeforeAll
  static void startPostgres() {
    server = PostgresServer.start();
  }

  @AfterAll
  static void stopPostgres() {
    if (server != null) {
      server.close();
    }
  }

  private static List<String> summaries(List<LeaseEvent> events) {
    return events.stream()
        .map(e -> e.type() + e.holding().map(h -> " " + h.owner() + " " + h.token()).orElse(" free"))
        .toList();
  }

  private static void await(List<LeaseEvent> events, int count) {
    Awaitility.await(count + " event(s)").atMost(Duration.ofSeconds(20))
        .until(() -> events.size() >= count);
  }

  @Test
  void changesMissedWhileTheListenerWasAwayGiveAGapWithTheStateReadAgain() throws Exception {
    String name = "observe-gap";
    try (PostgresBackend watcher = PostgresBackend.open(server.backendUri());
        PostgresBackend holders = PostgresBackend.open(server.backendUri());
        Lease a = holders.newLease(SuiteSettings.forTtl(name, "owner-a", TTL).build());
        Lease b = holders.newLease(SuiteSettings.forTtl(name, "owner-b", TTL).build())) {
      holders.connected().get(10, TimeUnit.SECONDS);
      List<LeaseEvent> events = new CopyOnWriteArrayList<>();
      watcher.observe(name, events::add);
      await(events, 1);

      watcher.listener().goAwayForTest();
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      a.release().get(10, TimeUnit.SECONDS);
      assertThat(b.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long tokenOfB = b.fencingToken().orElseThrow();
      watcher.listener().comeBackForTest();

      await(events, 2);
      assertThat(summaries(events)).containsExactly("CURRENT free", "GAP owner-b " + tokenOfB);

      b.release().get(10, TimeUnit.SECONDS);
      await(events, 3);
      assertThat(summaries(events).get(2)).isEqualTo("RELEASED owner-b " + tokenOfB);
    }
  }

  @Test
  void aDeletedLeaseRowIsNoEventUntilItsHolderReleased() throws Exception {
    String name = "observe-delete";
    try (PostgresBackend watcher = PostgresBackend.open(server.backendUri());
        PostgresBackend holders = PostgresBackend.open(server.backendUri());
        Lease a = holders.newLease(SuiteSettings.forTtl(name, "owner-a", TTL).build())) {
      holders.connected().get(10, TimeUnit.SECONDS);
      List<LeaseEvent> events = new CopyOnWriteArrayList<>();
      List<io.leasehold.LeaseLost> losses = new CopyOnWriteArrayList<>();
      a.onLost(losses::add);
      watcher.observe(name, events::add);
      await(events, 1);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = a.fencingToken().orElseThrow();
      await(events, 2);

      PostgresFixture.deleteLeaseRow(server, name);

      // The holder learns at its next heartbeat, runs its handlers, then releases: only that
      // frees the name, and that is what the observer is told.
      await(events, 3);
      assertThat(losses).hasSize(1);
      assertThat(summaries(events))
          .containsExactly("CURRENT free", "ACQUIRED owner-a " + token, "RELEASED owner-a " + token);
    }
  }

  /** The channel is {@code <schema>_leases}: it must fit PostgreSQL's 63-byte names. */
  @Test
  void theLongestSchemaAllowedStillGetsItsNotifications() throws Exception {
    String schema = "s".repeat(PostgresUri.MAX_SCHEMA_LENGTH);
    String name = "long-schema";
    try (PostgresBackend watcher = PostgresBackend.open(server.backendUri(server.port(), "schema=" + schema));
        PostgresBackend holders = PostgresBackend.open(server.backendUri(server.port(), "schema=" + schema));
        Lease a = holders.newLease(SuiteSettings.forTtl(name, "owner-a", TTL).build())) {
      holders.connected().get(10, TimeUnit.SECONDS);
      List<LeaseEvent> events = new CopyOnWriteArrayList<>();
      watcher.observe(name, events::add);
      await(events, 1);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      await(events, 2);
      assertThat(summaries(events)).containsExactly("CURRENT free", "ACQUIRED owner-a " + a.fencingToken().orElseThrow());
    }
  }

  @Test
  void aNotificationCarriesNamesAndHoldersOfAnyCharacters() {
    String name = "näme with spaces, \"quotes\" and 🦊";
    String holder = "öwner 1#abc";
    String payload = "acquired 7 " + name.codePointCount(0, name.length()) + " " + name + holder;
    assertThat(PostgresObservation.Notice.parse(payload))
        .isEqualTo(new PostgresObservation.Notice(true, 7, name, holder));
    assertThat(PostgresObservation.Notice.parse("not ours")).isNull();
  }
}
