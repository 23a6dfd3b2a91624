package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.RenewalListener;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The database goes away while leases are held: its connections drop, and the sessions live on
 * in its tables. A restart shorter than the safe window keeps the tenure (renewals resume on new
 * connections, and the session row's expiry was measured by the database's clock); an outage
 * longer than it ends the tenure at the holder's local deadline, and afterwards the name goes to
 * another owner with a greater token. A server of its own per test: restarting the shared one
 * would disturb the other classes.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class PostgresRestartTest {

  private PostgresServer server;

  @BeforeEach
  void startPostgres() {
    server = PostgresServer.start();
  }

  @AfterEach
  void stopPostgres() {
    if (server != null) {
      server.close();
    }
  }

  @Test
  void aRestartShorterThanTheSafeWindowKeepsTheLease() throws Exception {
    // A TTL that a fast restart (about a second here) fits in many times.
    Duration ttl = Duration.ofSeconds(10);
    try (PostgresBackend backendA = PostgresBackend.open(server.backendUri());
        PostgresBackend backendB = PostgresBackend.open(server.backendUri());
        Lease a = backendA.newLease(SuiteSettings.forTtl("restart", "owner-a", ttl)
            .heartbeatInterval(Duration.ofMillis(500)).build());
        Lease b = backendB.newLease(SuiteSettings.forTtl("restart", "owner-b", ttl).build())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      a.onLost(losses::add);
      AtomicInteger renewals = new AtomicInteger();
      ((ManagedLease) a).onRenewal(new RenewalListener() {
        @Override
        public void renewed(long latencyNanos) {
          renewals.incrementAndGet();
        }

        @Override
        public void renewalFailed(long latencyNanos, Throwable cause) {}
      });
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = a.fencingToken().orElseThrow();

      server.restart();
      int afterRestart = renewals.get();

      Awaitility.await("owner-a renews again after the restart")
          .atMost(ttl)
          .until(() -> renewals.get() > afterRestart + 2);
      assertThat(losses).isEmpty();
      assertThat(a.checkAlive()).isTrue();
      assertThat(a.fencingToken().orElseThrow()).isEqualTo(token);
      assertThat(b.acquire().get(10, TimeUnit.SECONDS)).as("owner-b's acquire after the restart").isFalse();
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).as("owner-a confirms its tenure").isTrue();
      assertThat(a.fencingToken().orElseThrow()).isEqualTo(token);
    }
  }

  @Test
  void anOutageLongerThanTheSafeWindowEndsTheTenureAtTheLocalDeadline() throws Exception {
    Duration ttl = PostgresFixture.TTL;
    try (PostgresBackend backendA = PostgresBackend.open(server.backendUri());
        PostgresBackend backendB = PostgresBackend.open(server.backendUri());
        Lease a = backendA.newLease(SuiteSettings.forTtl("outage", "owner-a", ttl).build());
        Lease b = backendB.newLease(SuiteSettings.forTtl("outage", "owner-b", ttl).build())) {
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      a.onLost(losses::add);
      // Connected and the schema made, as in a process that has been up a while: the suite's
      // operation timeout (400 ms) is not meant to cover the first connection and the schema.
      backendA.connected().get(10, TimeUnit.SECONDS);
      backendB.connected().get(10, TimeUnit.SECONDS);
      assertThat(a.acquire().get(10, TimeUnit.SECONDS)).isTrue();
      long token = a.fencingToken().orElseThrow();

      server.stop();
      Awaitility.await("owner-a's loss while the database is down")
          .atMost(ttl.multipliedBy(5))
          .until(() -> !losses.isEmpty());
      assertThat(losses.get(0).kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
      assertThat(a.checkAlive()).isFalse();
      server.startAgain();

      Awaitility.await("owner-b gets the lease once the database is back")
          .atMost(ttl.multipliedBy(10))
          .pollInterval(Duration.ofMillis(100))
          .ignoreExceptions()
          .until(() -> b.acquire().get(10, TimeUnit.SECONDS));
      assertThat(b.fencingToken().orElseThrow()).isGreaterThan(token);
      assertThat(losses).hasSize(1);
    }
  }
}
