package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold get} and {@code leasehold watch} against a real 3-node cluster in this JVM. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("integration")
class GetWatchCommandTest {

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster =
        LocalCluster.start(3, 0, DevCommandTest.freshDir("get-watch"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void getShowsTheHolderTokenAndAttachedKeysThenFree() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(cluster.uri())) {
      Lease held = backend.newLease(settings("orders", "node-1"));
      // Retried: on a loaded machine a first acquire may time out.
      await("node-1 acquires").atMost(Duration.ofSeconds(30)).ignoreExceptions()
          .until(() -> held.acquire().get(20, TimeUnit.SECONDS));
      long token = held.fencingToken().orElseThrow();
      held.attach("address", "10.0.0.1:8080").get(20, TimeUnit.SECONDS);

      Cli text = Cli.run("get", "orders", "--backend", cluster.uri());
      Cli json = Cli.run("get", "orders", "--backend", cluster.uri(), "--json");

      System.out.print(text.out() + json.out()); // real output, as docs/watch.md shows it
      assertThat(text.exitCode()).as(text.out() + text.err()).isZero();
      assertThat(text.out())
          .isEqualTo("lease 'orders' is held by " + held.holder() + " with token " + token + "%n  address = 10.0.0.1:8080%n".formatted());
      assertThat(json.out().strip())
          .isEqualTo("{\"name\":\"orders\",\"holder\":\"" + held.holder() + "\",\"owner\":\"node-1\",\"token\":" + token
              + ",\"attached\":{\"address\":\"10.0.0.1:8080\"}}");

      held.release().get(20, TimeUnit.SECONDS);
      Cli free = Cli.run("get", "orders", "--backend", cluster.uri());
      assertThat(free.out()).isEqualTo("lease 'orders' is free%n".formatted());
    }
  }

  @Test
  void watchPrintsTheCurrentStateThenEachChangeInOrder() throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CompletableFuture<Integer> watching =
        CompletableFuture.supplyAsync(
            () ->
                Main.commandLine()
                    .setOut(new PrintWriter(out, true))
                    .setErr(new PrintWriter(err, true))
                    .execute("watch", "nightly", "--backend", cluster.uri(), "--count", "3"));
    await("the watch prints the current state").atMost(Duration.ofSeconds(30)).until(() -> out.toString().contains("CURRENT"));
    try (LeaseBackend backend = LeaseBackend.open(cluster.uri())) {
      Lease lease = backend.newLease(settings("nightly", "node-2"));
      await("node-2 acquires").atMost(Duration.ofSeconds(30)).ignoreExceptions()
          .until(() -> lease.acquire().get(20, TimeUnit.SECONDS));
      long token = lease.fencingToken().orElseThrow();
      lease.release().get(20, TimeUnit.SECONDS);

      assertThat(watching.get(60, TimeUnit.SECONDS)).as(err.toString()).isZero();
      System.out.print(out); // real output, as docs/watch.md shows it
      List<String> lines = out.toString().lines().map(l -> l.substring(l.indexOf(' ') + 1)).toList();
      assertThat(lines)
          .containsExactly(
              "CURRENT nightly free",
              "ACQUIRED nightly " + lease.holder() + " token " + token,
              "RELEASED nightly " + lease.holder() + " token " + token);
    }
  }

  @Test
  void badOptionsExit2NamingTheOption() {
    Cli run = Cli.run("watch", "x", "--backend", "memory:", "--count", "0");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("--count must be between 1 and 1000000; was 0");
    Cli get = Cli.run("get", "x", "--backend", "nosuch://x");
    assertThat(get.exitCode()).isEqualTo(2);
    assertThat(get.err()).contains("--backend: no Leasehold backend for scheme 'nosuch'");
  }

  private static LeaseSettings settings(String name, String owner) {
    return LeaseSettings.builder(name, owner).ttl(Duration.ofSeconds(5)).build();
  }
}
