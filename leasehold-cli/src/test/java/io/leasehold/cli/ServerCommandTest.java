package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold server}: a real one-node cluster in this JVM, stopped and started again. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ServerCommandTest {

  @Test
  void aServerServesLeasesStopsCleanlyAndKeepsItsDataAcrossARestart() throws Exception {
    int port = RunningCli.freePortPair();
    Path data = DevCommandTest.freshDir("server");
    String uri = "leasehold://127.0.0.1:" + port;
    String[] args = {
      "server", "--id", "solo", "--peers", "solo=127.0.0.1:" + port, "--data-dir", data.toString(),
      "--election-timeout", "150ms"
    };

    long firstToken;
    try (RunningCli server = RunningCli.start(args)) {
      server.awaitErr("leasehold server: node solo of 1 runs: clients on 127.0.0.1:" + port, Duration.ofSeconds(30));
      firstToken = acquireAndRelease(uri);
      Cli status = Cli.run("status", "--backend", uri);
      assertThat(status.out()).containsPattern("(?m)^solo +127\\.0\\.0\\.1:" + port + " +LEADER ");
      assertThat(server.stop()).as(server.err()).isZero();
      assertThat(server.err()).contains("leasehold server: stopping node solo");
    }
    assertThat(Cli.run("status", "--backend", uri, "--timeout", "500ms").exitCode())
        .as("the node is gone")
        .isEqualTo(1);

    try (RunningCli again = RunningCli.start(args)) {
      again.awaitErr("runs: clients on", Duration.ofSeconds(30));
      // Fencing tokens only grow, so a greater one means the node recovered its data.
      assertThat(acquireAndRelease(uri)).isGreaterThan(firstToken);
      assertThat(again.stop()).isZero();
    }
  }

  @Test
  void aServerWhosePortIsTakenFailsWithTheReason() throws Exception {
    int port = RunningCli.freePortPair();
    try (java.net.ServerSocket taken = new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
      assertThat(taken.getLocalPort()).isEqualTo(port);
      Cli run =
          Cli.run("server", "--id", "a", "--peers", "a=127.0.0.1:" + port, "--data-dir",
              DevCommandTest.freshDir("server-taken").toString());

      assertThat(run.exitCode()).isEqualTo(1);
      assertThat(run.err()).contains("leasehold server: node a could not start: ");
    }
  }

  private static long acquireAndRelease(String uri) throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(uri);
        Lease lease = backend.newLease(LeaseSettings.builder("kept", "test").ttl(Duration.ofSeconds(5)).build())) {
      // The node may still be electing itself; acquire retries on its own, but not forever.
      await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> lease.acquire().get(10, TimeUnit.SECONDS));
      long token = lease.fencingToken().orElseThrow();
      lease.release().get(10, TimeUnit.SECONDS);
      return token;
    }
  }
}
