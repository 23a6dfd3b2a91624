package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold revoke} against a real 3-node cluster in this JVM. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class RevokeCommandTest {

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster =
        LocalCluster.start(3, 0, DevCommandTest.freshDir("revoke"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void revokeNamesTheHolderAndTokenAndTheHolderStopsBeforeAnyoneElseHoldsIt() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(cluster.uri());
        LeaseBackend other = LeaseBackend.open(cluster.uri())) {
      Lease held = backend.newLease(settings("nightly-report", "node-1"));
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      held.onLost(losses::add);
      // Retried: on a loaded machine a first acquire may time out.
      await("node-1 acquires").atMost(Duration.ofSeconds(30)).ignoreExceptions()
          .until(() -> held.acquire().get(20, TimeUnit.SECONDS));
      long token = held.fencingToken().orElseThrow();

      Cli run = Cli.run("revoke", "nightly-report", "--backend", cluster.uri());

      assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
      assertThat(run.out())
          .contains("revoked lease 'nightly-report': it was held by " + held.holder() + " with token " + token);
      await("the holder's onLost").atMost(Duration.ofSeconds(20)).until(() -> !losses.isEmpty());
      assertThat(losses.get(0).kind()).isEqualTo(LeaseLost.Kind.REVOKED);
      assertThat(held.checkAlive()).isFalse();
      Lease next = other.newLease(settings("nightly-report", "node-2"));
      await("another owner acquires it once the holder stopped")
          .atMost(Duration.ofSeconds(30))
          .ignoreExceptions()
          .until(() -> next.acquire().get(20, TimeUnit.SECONDS));
      assertThat(next.fencingToken().orElseThrow()).isGreaterThan(token);
    }
  }

  @Test
  void revokingALeaseNobodyHoldsExits1() {
    Cli run = Cli.run("revoke", "nobody-holds-this", "--backend", cluster.uri());

    assertThat(run.exitCode()).as(run.out() + run.err()).isEqualTo(1);
    assertThat(run.err()).contains("leasehold revoke: nobody holds lease 'nobody-holds-this' on " + cluster.uri());
  }

  @Test
  void whenNoNodeAnswersRevokeFailsAndSaysSo() {
    String uri = "leasehold://127.0.0.1:" + RunningCli.freePortPair();

    Cli run = Cli.run("revoke", "x", "--backend", uri, "--timeout", "500ms");

    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.err()).contains("leasehold revoke: no node of " + uri + " answered");
  }

  @Test
  void badUsageExits2WithTheReason() {
    Cli noName = Cli.run("revoke", "--backend", cluster.uri());
    assertThat(noName.exitCode()).isEqualTo(2);
    assertThat(noName.err()).contains("Missing required parameter: 'NAME'");

    Cli notCore = Cli.run("revoke", "x", "--backend", "memory:");
    assertThat(notCore.exitCode()).isEqualTo(2);
    assertThat(notCore.err()).contains("--backend must be a core URI, leasehold://host:port");

    Cli tooLong = Cli.run("revoke", "x".repeat(257), "--backend", cluster.uri());
    assertThat(tooLong.exitCode()).isEqualTo(2);
    assertThat(tooLong.err()).contains("NAME must be 1 to 256 characters; was 257");

    Cli badTimeout = Cli.run("revoke", "x", "--backend", cluster.uri(), "--timeout", "10ms");
    assertThat(badTimeout.exitCode()).isEqualTo(2);
    assertThat(badTimeout.err()).contains("--timeout must be between 100ms and 1m");
  }

  private static LeaseSettings settings(String name, String owner) {
    return LeaseSettings.builder(name, owner).ttl(Duration.ofSeconds(5)).build();
  }
}
