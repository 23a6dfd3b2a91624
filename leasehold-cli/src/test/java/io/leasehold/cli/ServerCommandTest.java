package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold server}: real clusters in this JVM, stopped and started again. */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
@Tag("integration")
class ServerCommandTest {

  private static final Duration START = Duration.ofSeconds(30);

  @Test
  void aNodeReachableFromOtherHostsWithoutTlsIsWarnedAboutOnceAndOneOnLoopbackOrWithTlsIsNot() {
    io.leasehold.server.NodeConfig exposed =
        io.leasehold.server.NodeConfig.of("n1", io.leasehold.server.Peer.parseAll("n1=10.1.2.3:7000"), Path.of("target/never-created"));
    assertThat(ServerCommand.plaintextWarning(exposed))
        .hasValueSatisfying(w -> assertThat(w).contains("WITHOUT TLS: it is unauthenticated").contains("--tls-cert"));
    assertThat(ServerCommand.plaintextWarning(
            io.leasehold.server.NodeConfig.of("n1", io.leasehold.server.Peer.parseAll("n1=127.0.0.1:7000"), Path.of("target/never-created"))))
        .isEmpty();
    Path pem = Path.of("pom.xml");
    assertThat(ServerCommand.plaintextWarning(exposed.withTls(io.leasehold.server.TlsConfig.of(pem, pem, pem)))).isEmpty();
  }

  @Test
  void aServerServesLeasesStopsCleanlyAndKeepsItsDataAcrossARestart() throws Exception {
    int port = RunningCli.freePortPair();
    Path data = DevCommandTest.freshDir("server").resolve("solo");
    String uri = "leasehold://127.0.0.1:" + port;
    String[] args = {
      "server", "--id", "solo", "--peers", "solo=127.0.0.1:" + port, "--data-dir", data.toString(),
      "--election-timeout", "150ms"
    };

    long firstToken;
    try (RunningCli server = RunningCli.start(with(args, "--bootstrap"))) {
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

    // --bootstrap on a directory with data is refused, before anything is touched.
    Cli formatAgain = Cli.run(with(args, "--bootstrap"));
    assertThat(formatAgain.exitCode()).as(formatAgain.err()).isEqualTo(2);
    assertThat(formatAgain.err())
        .isEqualTo(
            "leasehold server: node solo refuses to start: --bootstrap formats a new node, but --data-dir "
                + data + " is not empty (it holds " + io.leasehold.server.DataDir.storage(data).getFileName() + "); a node with data recovers"
                + " it when started without --bootstrap, and a directory with data is never wiped\n");

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
              DevCommandTest.freshDir("server-taken").toString(), "--bootstrap");

      assertThat(run.exitCode()).isEqualTo(1);
      // Checked before the node starts: one line, naming the port.
      assertThat(run.err())
          .isEqualTo("leasehold server: node a cannot start: its client port " + port + " is in use (another"
              + " node or program on this machine?); give it other ports in --peers" + System.lineSeparator());
    }
  }

  /**
   * Finding 4 of the safety review: a node whose disk was wiped came back formatted, with an empty
   * log and a vote. Here n3 misses the second tenure, n2 has it and loses its disk, n1 (the other
   * copy) is down: had n2 started empty, n2 and n3 would elect a leader without that tenure, and
   * its fencing token would be issued again.
   */
  @Test
  void aNodeWhoseDataWasWipedIsRefusedAndTheTokensNeverGoBack() throws Exception {
    Path root = DevCommandTest.freshDir("server-wiped");
    Cluster cluster = new Cluster(root, "150ms", "150ms", "150ms");
    RunningCli[] nodes = new RunningCli[3];
    try {
      for (int i = 0; i < 3; i++) {
        nodes[i] = RunningCli.start(with(cluster.args(i), "--bootstrap"));
      }
      for (RunningCli node : nodes) {
        node.awaitErr("runs: clients on", START);
      }
      long first = acquireAndRelease(cluster.uri());
      assertThat(nodes[2].stop()).isZero();
      long second = acquireAndRelease(cluster.uri()); // on n1 and n2 only
      assertThat(second).isGreaterThan(first);
      assertThat(nodes[1].stop()).isZero();
      DevCommandTest.deleteTree(cluster.dataDir(1));
      assertThat(nodes[0].stop()).isZero();

      nodes[2] = RunningCli.start(cluster.args(2));
      nodes[2].awaitErr("runs: clients on", START);
      nodes[1] = RunningCli.start(cluster.args(1)); // no --bootstrap: it was part of the cluster

      assertThat(nodes[1].awaitExit(START)).as(nodes[1].err()).isEqualTo(2);
      assertThat(nodes[1].err())
          .isEqualTo(
              "leasehold server: node n2 refuses to start: --data-dir " + cluster.dataDir(1) + " does not exist;"
                  + " a node formats its data only on its first start in a new cluster, with --bootstrap; a node"
                  + " that lost its data must not rejoin with an empty log, because it would vote, and"
                  + " acknowledged leases could be lost and fencing tokens issued again\n");
      assertThat(cluster.dataDir(1)).as("a refused node creates nothing").doesNotExist();

      nodes[0] = RunningCli.start(cluster.args(0));
      nodes[0].awaitErr("runs: clients on", START);
      assertThat(acquireAndRelease(cluster.uri())).as("the tenure n3 missed is not lost").isGreaterThan(second);
    } finally {
      for (RunningCli node : nodes) {
        if (node != null) {
          node.close();
        }
      }
    }
  }

  /**
   * Finding 7: the leader lease that confirms keep-alives assumes the same election timeout on
   * every node, so a node that finds a running one with another timeout does not start.
   */
  @Test
  void aNodeWhoseElectionTimeoutDiffersFromARunningNodesIsRefused() throws Exception {
    Path root = DevCommandTest.freshDir("server-timeouts");
    Cluster cluster = new Cluster(root, "300ms", "150ms");
    try (RunningCli n1 = RunningCli.start(with(cluster.args(0), "--bootstrap"))) {
      n1.awaitErr("runs: clients on", START);

      RunningCli n2 = RunningCli.start(with(cluster.args(1), "--bootstrap"));

      assertThat(n2.awaitExit(START)).as(n2.err()).isEqualTo(2);
      assertThat(n2.err())
          .isEqualTo(
              "leasehold server: node n2 refuses to start: its --election-timeout is 150ms, but n1 runs with"
                  + " 300ms; every node of a cluster needs the same --election-timeout (the Raft leader lease"
                  + " that confirms keep-alives and reads assumes it)\n");
      assertThat(cluster.dataDir(1)).as("a refused node creates nothing").doesNotExist();
      assertThat(n1.stop()).isZero();
    }
  }

  /** Nodes n1, n2, ... on free loopback ports, each with its own directory under one root. */
  private record Cluster(Path root, List<Integer> ports, String... electionTimeouts) {

    Cluster(Path root, String... electionTimeouts) {
      this(root, freePorts(electionTimeouts.length), electionTimeouts);
    }

    private static List<Integer> freePorts(int n) {
      List<Integer> ports = new ArrayList<>();
      while (ports.size() < n) {
        int p = RunningCli.freePortPair();
        if (ports.stream().allMatch(q -> Math.abs(q - p) > 1)) {
          ports.add(p);
        }
      }
      return ports;
    }

    String peers() {
      return IntStream.range(0, ports.size())
          .mapToObj(i -> "n" + (i + 1) + "=127.0.0.1:" + ports.get(i))
          .collect(Collectors.joining(","));
    }

    String uri() {
      return "leasehold://" + ports.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
    }

    Path dataDir(int i) {
      return root.resolve("n" + (i + 1));
    }

    String[] args(int i) {
      return new String[] {
        "server", "--id", "n" + (i + 1), "--peers", peers(), "--data-dir", dataDir(i).toString(),
        "--election-timeout", electionTimeouts[i]
      };
    }
  }

  private static String[] with(String[] args, String... more) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
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
