package io.leasehold.postgresql;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * The whole contract on a real PostgreSQL (one per class), on real time with a 2 s TTL; faults
 * through a TCP proxy per contender, revocation by a {@code DELETE} of the lease's row.
 */
@Tag("integration")
class PostgresContractTest extends LeaseContractSuite {

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
  protected ContractFixture createFixture() {
    return new PostgresFixture(server);
  }
}
