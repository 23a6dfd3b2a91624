package io.leasehold.postgresql;

import io.leasehold.testkit.ProcessPauseSuite;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * Scenario (d) with a real pause: a holder JVM frozen with {@code SIGSTOP} (its heartbeat thread
 * too) while another process takes the lease from a real PostgreSQL.
 */
@Tag("integration")
class PostgresProcessPauseTest extends ProcessPauseSuite {

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

  @Override
  protected String backendUri() {
    return server.backendUri();
  }

  @Override
  protected Duration ttl() {
    return PostgresFixture.TTL;
  }
}
