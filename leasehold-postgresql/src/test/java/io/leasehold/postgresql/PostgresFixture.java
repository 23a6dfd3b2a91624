package io.leasehold.postgresql;

import io.leasehold.LeaseBackend;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TimeControl;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The contract suite's fixture on a real PostgreSQL. Each contender is its own process as far as
 * the database can tell: its own connections, through its own {@link
 * io.leasehold.testkit.TcpProxy}, and its own timer and callback threads behind a gate.
 *
 * <ul>
 *   <li>partition: the proxy black-holes the contender's traffic both ways;</li>
 *   <li>crash: the gate stops every timer and the connections are cut without a release; the
 *       session row and its leases stay until they expire by the database's clock;</li>
 *   <li>pause: the gate freezes the timers (heartbeats included) and the proxy black-holes the
 *       traffic ({@link PostgresProcessPauseTest} freezes a whole JVM).</li>
 * </ul>
 *
 * <p>An operator's revocation is a plain {@code DELETE} of the lease's row.
 */
final class PostgresFixture implements ContractFixture {

  /**
   * 2 s, as on etcd: the suite's operation timeout (TTL/5) is then 400 ms, which every statement
   * meets on a busy two-core machine; a shorter TTL buys little, since the suite's clauses run side
   * by side.
   */
  static final Duration TTL = Duration.ofSeconds(2);

  private static final AtomicInteger CONTENDERS = new AtomicInteger();

  private final PostgresServer server;

  PostgresFixture(PostgresServer server) {
    this.server = server;
  }

  @Override
  public Contender newContender() {
    return new PostgresContender(server);
  }

  @Override
  public TimeControl time() {
    return TimeControl.realTime();
  }

  @Override
  public Duration ttl() {
    return TTL;
  }

  @Override
  public void revokeInStore(String leaseName) {
    deleteLeaseRow(server, leaseName);
  }

  static void deleteLeaseRow(PostgresServer server, String leaseName) {
    try (Connection c = server.admin();
        PreparedStatement s = c.prepareStatement("DELETE FROM leasehold.leases WHERE name = ?")) {
      s.setString(1, leaseName);
      s.executeUpdate();
    } catch (Exception e) {
      throw new AssertionError("could not delete the row of " + leaseName + " in PostgreSQL", e);
    }
  }

  @Override
  public boolean observesLeases() {
    return true;
  }

  @Override
  public boolean attachesKeys() {
    return true;
  }

  @Override
  public void close() {}

  static final class PostgresContender extends ProxiedContender {
    private final PostgresBackend backend;

    PostgresContender(PostgresServer server) {
      super("postgresql-contender-" + CONTENDERS.incrementAndGet(), List.of(server.address()));
      backend = PostgresBackend.open(server.backendUri(proxies().get(0).port()), runtime());
      // A process that has been up a while is connected and has its session: the suite's first
      // acquire should not pay for the connection's set-up (SCRAM) within its operation timeout.
      backend.connected().orTimeout(10, TimeUnit.SECONDS).join();
      backend.warmUp(SuiteSettings.forTtl("warm-up", "warm-up", TTL).build())
          .orTimeout(10, TimeUnit.SECONDS)
          .join();
    }

    @Override
    public LeaseBackend backend() {
      return backend;
    }

    @Override
    protected void abandon() {
      backend.closeAbruptly();
    }
  }
}
