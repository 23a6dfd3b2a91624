package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold dev} runs a real cluster in this JVM, on free ports, under target/. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class DevCommandTest {

  private static final Duration START = Duration.ofSeconds(40);

  @Test
  void devPrintsAUriThatALeaseBackendCanUseAndStopsCleanly() throws Exception {
    Path dir = freshDir("dev");
    String uri;
    try (RunningCli dev = RunningCli.start("dev", "--port", "0", "--dir", dir.toString())) {
      uri = dev.awaitLine("leasehold://[^\\s]+", START);
      dev.awaitLine("Ctrl-C stops the cluster\\.", START);
      assertThat(uri.substring("leasehold://".length()).split(",")).hasSize(3);
      assertThat(dev.out())
          .contains("data in " + dir.toAbsolutePath())
          .containsPattern("check: dev-check-a acquired 'leasehold-dev-check' \\(fencing token \\d+\\)")
          .contains("check: dev-check-b was refused while dev-check-a holds it")
          .contains("The core works.")
          // Not the default URI, so the hint names it.
          .contains("./leasehold status --backend " + uri);

      try (LeaseBackend backend = LeaseBackend.open(uri);
          Lease lease = backend.newLease(LeaseSettings.builder("orders", "test").ttl(Duration.ofSeconds(5)).build())) {
        assertThat(lease.acquire().get(20, TimeUnit.SECONDS)).isTrue();
        assertThat(lease.fencingToken()).isPresent();
        assertThat(lease.checkAlive()).isTrue();
        lease.release().get(20, TimeUnit.SECONDS);
      }

      assertThat(dev.stop()).as(dev.out() + dev.err()).isZero();
      assertThat(dev.out())
          .contains("leasehold dev: stopping (interrupted)")
          .contains("leasehold dev: stopped; data kept in " + dir.toAbsolutePath());
    }
    assertThat(dir.resolve("n1")).isDirectory();
    assertThat(dir.resolve(DevCommand.MARKER)).content().contains(uri.replace(":", "\\:"));
    Cli status = Cli.run("status", "--backend", uri, "--timeout", "500ms");
    assertThat(status.exitCode()).as("the cluster is gone: " + status.out()).isEqualTo(1);
  }

  @Test
  void devWithTlsServesMutualTlsAndPrintsAUriNamingTheClientsFiles() throws Exception {
    try (RunningCli dev = RunningCli.start("dev", "--tls", "--nodes", "1", "--port", "0")) {
      String uri = dev.awaitLine("leaseholds://[^\\s]+", START);
      dev.awaitLine("Ctrl-C stops the cluster\\.", START);
      assertThat(dev.out())
          .contains("leasehold dev: made a throwaway CA and certificates in ")
          .contains("the cluster serves with mutual TLS")
          .contains("a client needs the CA ")
          .contains("The core works.");
      assertThat(uri).contains("?ca=").contains("&cert=").contains("&key=");
      // What is meant to be pasted into a shell is quoted: unquoted, the shell ends the command at the &.
      assertThat(dev.out())
          .contains("\n  ./leasehold status --backend '" + uri + "'\n")
          .contains("\nor, for every command of that terminal: export LEASEHOLD_BACKEND='" + uri + "'\n");

      Cli status = Cli.run("status", "--backend", uri, "--timeout", "5s");
      assertThat(status.exitCode()).as(status.out() + status.err()).isZero();
      assertThat(status.out()).contains("LEADER");
      // The same nodes in plaintext: refused, since every port speaks TLS only.
      String plain = "leasehold://" + uri.substring("leaseholds://".length(), uri.indexOf('?'));
      Cli refused = Cli.run("status", "--backend", plain, "--timeout", "1s");
      assertThat(refused.exitCode()).as(refused.out() + refused.err()).isEqualTo(1);

      assertThat(dev.stop()).as(dev.out() + dev.err()).isZero();
    }
  }

  @Test
  void withADurationDevStopsByItselfAndDeletesItsTemporaryDirectory() {
    Cli run = Cli.run("dev", "--nodes", "1", "--port", "0", "--duration", "1s");

    assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
    assertThat(run.out())
        .containsPattern("(?m)^leasehold://127\\.0\\.0\\.1:\\d+$")
        .contains("The core works.")
        .contains("The cluster stops after 1s (--duration)")
        .contains("leasehold dev: stopping (ran for 1s)");
    Matcher dataDir = Pattern.compile("data in (\\S+) \\(deleted when it stops").matcher(run.out());
    assertThat(dataDir.find()).as(run.out()).isTrue();
    assertThat(Path.of(dataDir.group(1))).doesNotExist();
  }

  @Test
  void aKeptDirectoryStartsTheSameClusterAgainWithItsData() throws IOException {
    Path dir = freshDir("dev-kept");
    String port = String.valueOf(RunningCli.freePortPair());
    String[] args = {"dev", "--nodes", "1", "--port", port, "--dir", dir.toString(), "--duration", "1s"};

    Cli first = Cli.run(args);
    Cli second = Cli.run(args);

    assertThat(first.exitCode()).as(first.out() + first.err()).isZero();
    assertThat(second.exitCode()).as(second.out() + second.err()).isZero();
    // LocalCluster's port scheme is the one Backends.devUri assumes.
    assertThat(first.out()).contains("\n" + Backends.devUri(1, Integer.parseInt(port)) + "\n");
    // Fencing tokens only grow: the second run's first tenure outranks the first run's last one
    // only if the cluster came back with its data.
    assertThat(tokens(second.out())[0]).isGreaterThan(tokens(first.out())[1]);
  }

  @Test
  void aKeptClusterWhoseNodeLostItsDirectoryIsRefusedNotStartedEmpty() throws IOException {
    Path dir = freshDir("dev-wiped");
    String port = String.valueOf(RunningCli.freePortPair());
    String[] args = {"dev", "--nodes", "1", "--port", port, "--dir", dir.toString(), "--duration", "1s"};
    Cli first = Cli.run(args);
    assertThat(first.exitCode()).as(first.out() + first.err()).isZero();
    deleteTree(dir.resolve("n1"));

    Cli second = Cli.run(args);

    assertThat(second.exitCode()).as(second.out() + second.err()).isEqualTo(2);
    assertThat(second.err())
        .startsWith("leasehold dev: the cluster kept in " + dir.toAbsolutePath() + " could not start: node n1"
            + " refuses to start: --data-dir " + dir.resolve("n1") + " does not exist;")
        .endsWith("(leasehold dev formats only a new --dir; to start afresh, give another --dir or delete this one)\n");
    assertThat(dir.resolve("n1")).doesNotExist();
  }

  @Test
  void devRefusesADirectoryThatHoldsAnotherClusterOrOtherFiles() throws IOException {
    Path kept = freshDir("dev-other");
    Files.writeString(kept.resolve(DevCommand.MARKER), "uri=leasehold\\://127.0.0.1\\:7000\n");
    Path busy = freshDir("dev-busy");
    Files.writeString(busy.resolve("notes.txt"), "mine");

    Cli otherCluster = Cli.run("dev", "--nodes", "1", "--port", "7100", "--dir", kept.toString());
    Cli portZero = Cli.run("dev", "--port", "0", "--dir", kept.toString());
    Cli otherFiles = Cli.run("dev", "--dir", busy.toString());

    assertThat(otherCluster.exitCode()).isEqualTo(2);
    assertThat(otherCluster.err())
        .contains("holds the data of the cluster leasehold://127.0.0.1:7000, not of leasehold://127.0.0.1:7100");
    assertThat(portZero.exitCode()).isEqualTo(2);
    assertThat(portZero.err()).contains("--port 0 would start it on other ports");
    assertThat(otherFiles.exitCode()).isEqualTo(2);
    assertThat(otherFiles.err()).contains("--dir must be new, empty, or a directory an earlier");
    assertThat(busy.resolve("n1")).doesNotExist();
  }

  private static long[] tokens(String out) {
    Matcher m = Pattern.compile("fencing token (\\d+)").matcher(out);
    long[] tokens = new long[2];
    for (int i = 0; i < 2; i++) {
      assertThat(m.find()).as(out).isTrue();
      tokens[i] = Long.parseLong(m.group(1));
    }
    return tokens;
  }

  static void deleteTree(Path dir) throws IOException {
    try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  static Path freshDir(String name) {
    try {
      Files.createDirectories(Path.of("target"));
      return Files.createTempDirectory(Path.of("target"), name + "-");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
