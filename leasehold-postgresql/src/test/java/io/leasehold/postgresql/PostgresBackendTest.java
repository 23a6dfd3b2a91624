package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.Ticker;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.testkit.FileModes;
import io.leasehold.testkit.SuiteSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What is particular to PostgreSQL, on a real server: revocation by a {@code psql} {@code
 * DELETE}, the fencing counter apart from the lease rows, the schema's life (created, shipped,
 * versioned, applied by hand for a least-privileged user), and the refusal of a read-only server.
 * The store-level tests drive the SPI directly, so that no holder engine learns of a delete and
 * releases on its own: what they check is what the database lets happen meanwhile.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class PostgresBackendTest {

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

  private static PostgresBackend backend(String... extra) {
    return PostgresBackend.open(server.backendUri(server.port(), extra));
  }

  private static AcquireResult acquire(PostgresBackend backend, String name, HolderId holder, long requestId)
      throws Exception {
    backend.warmUp(SuiteSettings.forTtl(name, holder.owner(), TTL).build()).get(10, TimeUnit.SECONDS);
    return backend.store()
        .acquire(new AcquireRequest(name, holder, requestId, TTL, Ticker.system().read()))
        .get(10, TimeUnit.SECONDS);
  }

  private static void psql(String sql) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(server.psql().toString(), "-h", "127.0.0.1", "-p",
        Integer.toString(server.port()), "-U", PostgresServer.ADMIN, "-d", "postgres",
        "-v", "ON_ERROR_STOP=1", "-c", sql).redirectErrorStream(true);
    pb.environment().put("PGPASSWORD", server.password());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("psql finished").isTrue();
    assertThat(p.exitValue()).as("psql -c \"" + sql + "\": " + out).isZero();
  }

  @Test
  void aLeaseRowDeletedWithPsqlKeepsTheNameFromOthersUntilItsHolderReleased() throws Exception {
    String name = "psql-delete";
    HolderId a = HolderId.newIncarnation("owner-a");
    HolderId b = HolderId.newIncarnation("owner-b");
    try (PostgresBackend backendA = backend(); PostgresBackend backendB = backend()) {
      long tokenA = ((AcquireResult.Acquired) acquire(backendA, name, a, 1)).token();

      psql("DELETE FROM leasehold.leases WHERE name = '" + name + "'");

      // owner-a's session lives on (its heartbeats go on): the name stays owner-a's.
      for (long request = 1; request <= 3; request++) {
        assertThat(acquire(backendB, name, b, request))
            .as("owner-b's acquire after the DELETE, while owner-a has not released")
            .isEqualTo(new AcquireResult.HeldElsewhere(a.toString()));
      }
      // owner-a stopped and says so: a release of exactly its tenure frees the name.
      backendA.store()
          .release(new io.leasehold.spi.Tenure(name, a, 1, tokenA, TTL))
          .get(10, TimeUnit.SECONDS);
      AcquireResult next = acquire(backendB, name, b, 4);
      assertThat(next).isInstanceOf(AcquireResult.Acquired.class);
      assertThat(((AcquireResult.Acquired) next).token())
          .as("the token after the row was deleted")
          .isGreaterThan(tokenA);
    }
  }

  @Test
  void aHolderLearnsOfAPsqlDeleteAtItsNextHeartbeatAndOnlyThenIsTheNameFree() throws Exception {
    String name = "psql-delete-engine";
    try (PostgresBackend backendA = backend(); PostgresBackend backendB = backend();
        Lease a = backendA.newLease(SuiteSettings.forTtl(name, "owner-a", TTL).build());
        Lease b = backendB.newLease(SuiteSettings.forTtl(name, "owner-b", TTL).build())) {
      List<io.leasehold.LeaseLost> losses = new java.util.concurrent.CopyOnWriteArrayList<>();
      a.onLost(losses::add);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long tokenA = a.fencingToken().orElseThrow();

      psql("DELETE FROM leasehold.leases WHERE name = '" + name + "'");

      org.awaitility.Awaitility.await("owner-b gets the lease after owner-a stopped")
          .atMost(Duration.ofSeconds(20))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> {
            boolean got = b.acquire().get(10, TimeUnit.SECONDS);
            // Sampled after b's answer: if owner-b holds, owner-a must have stopped before.
            assertThat(!got || !a.checkAlive()).as("owner-a alive while owner-b holds").isTrue();
            return got;
          });
      assertThat(losses).hasSize(1);
      assertThat(losses.get(0).kind()).isEqualTo(io.leasehold.LeaseLost.Kind.REVOKED);
      assertThat(losses.get(0).detail()).contains("leasehold.leases", "deleted");
      assertThat(b.fencingToken().orElseThrow()).isGreaterThan(tokenA);
    }
  }

  @Test
  void aNamesRowDeletedByHandIsRebuiltFromTheLeaseRowSoTheNameStaysBlocked() throws Exception {
    String name = "names-delete";
    HolderId a = HolderId.newIncarnation("owner-a");
    HolderId b = HolderId.newIncarnation("owner-b");
    try (PostgresBackend backendA = backend(); PostgresBackend backendB = backend()) {
      long tokenA = ((AcquireResult.Acquired) acquire(backendA, name, a, 1)).token();
      psql("DELETE FROM leasehold.names WHERE name = '" + name + "'");
      assertThat(acquire(backendB, name, b, 1)).isEqualTo(new AcquireResult.HeldElsewhere(a.toString()));
      backendA.store().release(new io.leasehold.spi.Tenure(name, a, 1, tokenA, TTL)).get(10, TimeUnit.SECONDS);
      AcquireResult next = acquire(backendB, name, b, 2);
      assertThat(((AcquireResult.Acquired) next).token()).isGreaterThan(tokenA);
    }
  }

  @Test
  void aSessionRowCannotBeDeletedWhileLeasesAreRecordedOnIt() throws Exception {
    String name = "session-delete";
    HolderId a = HolderId.newIncarnation("owner-a");
    try (PostgresBackend backendA = backend()) {
      acquire(backendA, name, a, 1);
      try (Connection c = server.admin(); Statement s = c.createStatement()) {
        assertThatThrownBy(() -> s.executeUpdate("DELETE FROM leasehold.sessions WHERE id ="
                + " (SELECT session_id FROM leasehold.leases WHERE name = '" + name + "')"))
            .hasMessageContaining("violates foreign key constraint");
      }
    }
  }

  /**
   * A grant whose answer never reached its holder (made here by calling the acquire function by
   * hand on the backend's session) must not live on under the shared heartbeat: the next one
   * finds a row that no tenure of the process stands for and releases it.
   */
  @Test
  void aRowOnTheSessionThatNoHolderKnowsOfIsReleasedByTheNextHeartbeat() throws Exception {
    try (PostgresBackend backend = backend("schema=orphans");
        Lease known = backend.newLease(SuiteSettings.forTtl("known", "owner", TTL).build())) {
      backend.connected().get(10, TimeUnit.SECONDS); // the schema is made on the first connection
      backend.warmUp(known.settings()).get(10, TimeUnit.SECONDS);
      assertThat(known.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      try (Connection c = server.admin(); Statement s = c.createStatement()) {
        try (ResultSet r = s.executeQuery("SELECT r_outcome FROM orphans.acquire('orphan', 'ghost#1', 1,"
            + " (SELECT max(id) FROM orphans.sessions))")) {
          r.next();
          assertThat(r.getString(1)).isEqualTo("acquired");
        }
        org.awaitility.Awaitility.await("the orphaned row released").atMost(Duration.ofSeconds(10))
            .until(() -> {
              try (ResultSet r = s.executeQuery("SELECT holder IS NULL FROM orphans.names WHERE name = 'orphan'")) {
                r.next();
                return r.getBoolean(1);
              }
            });
        try (ResultSet r = s.executeQuery("SELECT count(*) FROM orphans.leases WHERE name = 'known'")) {
          r.next();
          assertThat(r.getInt(1)).as("the lease a holder knows of").isEqualTo(1);
        }
      }
      assertThat(known.checkAlive()).isTrue();
    }
  }

  @Test
  void aReadOnlyServerIsRefusedWithAnErrorThatSaysSo() throws Exception {
    try (Connection c = server.admin(); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE replica_like");
      s.execute("ALTER DATABASE replica_like SET default_transaction_read_only = on");
    }
    String uri = server.backendUri(server.port()).replace("/postgres?", "/replica_like?");
    try (PostgresBackend backend = PostgresBackend.open(uri);
        Lease lease = backend.newLease(SuiteSettings.forTtl("ro", "owner", TTL).build())) {
      assertThatThrownBy(() -> backend.connected().get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("the server is read-only")
          .hasMessageContaining("transaction_read_only = on");
      assertThatThrownBy(() -> lease.acquire().get(10, TimeUnit.SECONDS))
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class);
    }
  }

  @Test
  void withCreateSchemaFalseAMissingSchemaIsRefusedNamingTheScriptToApply() {
    try (PostgresBackend backend = backend("schema=not_applied", "create-schema=false")) {
      assertThatThrownBy(() -> backend.connected().get(10, TimeUnit.SECONDS))
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("schema not_applied has no Leasehold tables")
          .hasMessageContaining("apply V1__leasehold.sql");
    }
  }

  @Test
  void aSchemaOfANewerVersionIsRefused() throws Exception {
    try (Connection c = server.admin(); Statement s = c.createStatement()) {
      s.execute(Database.script("from_the_future"));
      s.execute("INSERT INTO from_the_future.schema_version (version) VALUES (2)");
    }
    try (PostgresBackend backend = backend("schema=from_the_future")) {
      assertThatThrownBy(() -> backend.connected().get(10, TimeUnit.SECONDS))
          .cause()
          .hasMessageContaining("schema version 2, newer than this backend's 1");
    }
  }

  @Test
  void theShippedScriptCanBeAppliedTwiceAndIsVersioned() throws Exception {
    try (Connection c = server.admin(); Statement s = c.createStatement()) {
      s.execute(Database.script("twice"));
      s.execute(Database.script("twice"));
      try (ResultSet r = s.executeQuery("SELECT array_agg(version) FROM twice.schema_version")) {
        r.next();
        assertThat((Integer[]) r.getArray(1).getArray()).containsExactly(1);
      }
    }
  }

  /** The grants docs/postgresql.md gives, for a user that may not create anything. */
  @Test
  void aLeastPrivilegedUserWithTheDocumentedGrantsHoldsLeases() throws Exception {
    try (Connection c = server.admin(); Statement s = c.createStatement()) {
      s.execute(Database.script("app_leases"));
      s.execute("CREATE ROLE lh_app LOGIN PASSWORD 'app-secret'");
      s.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC");
      s.execute("GRANT USAGE ON SCHEMA app_leases TO lh_app");
      s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA app_leases TO lh_app");
      s.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA app_leases TO lh_app");
      s.execute("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA app_leases TO lh_app");
    }
    java.nio.file.Path pw = server.passwordFile().resolveSibling("app-password");
    FileModes.ownerOnly(java.nio.file.Files.writeString(pw, "app-secret\n"));
    String uri = "postgresql://127.0.0.1:" + server.port() + "/postgres?schema=app_leases"
        + "&user=lh_app&password-file=" + pw + "&create-schema=false";
    try (PostgresBackend backend = PostgresBackend.open(uri);
        Lease a = backend.newLease(SuiteSettings.forTtl("least", "owner-a", TTL).build());
        Lease b = backend.newLease(SuiteSettings.forTtl("least", "owner-b", TTL).build())) {
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      assertThat(b.acquire().get(10, TimeUnit.SECONDS)).isFalse();
      a.release().get(10, TimeUnit.SECONDS);
      assertThat(b.acquire().get(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void aWrongPasswordFailsTheAcquireWithTheServersReason() throws Exception {
    java.nio.file.Path pw = server.passwordFile().resolveSibling("wrong-password");
    FileModes.ownerOnly(java.nio.file.Files.writeString(pw, "not-the-password\n"));
    String uri = "postgresql://127.0.0.1:" + server.port() + "/postgres?user=" + PostgresServer.ADMIN
        + "&password-file=" + pw;
    try (PostgresBackend backend = PostgresBackend.open(uri);
        Lease lease = backend.newLease(LeaseSettings.builder("wrong-pw", "owner").ttl(TTL).build())) {
      assertThatThrownBy(() -> lease.acquire().get(10, TimeUnit.SECONDS))
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("password authentication failed")
          .hasMessageContaining("check user, password-file, PGPASSFILE");
    }
  }
}
