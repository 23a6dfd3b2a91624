package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.server.LocalCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code leasehold admin transfer-leader} against a real 3-node cluster in this JVM, and the
 * hand-over of a {@code leasehold server} that leads when it is stopped.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
@Tag("integration")
class AdminCommandTest {

  private static final Duration PATIENCE = Duration.ofSeconds(30);

  @Test
  void transferLeaderMovesTheLeadershipToTheNamedNodeOrToOneTheLeaderPicks() {
    try (LocalCluster cluster =
        LocalCluster.start(3, 0, DevCommandTest.freshDir("admin"), c -> c.withElectionTimeout(Duration.ofMillis(300)))) {
      int leader = cluster.awaitLeader(PATIENCE);
      String target = cluster.peers().get((leader + 1) % 3).id();

      Cli named = Cli.run("admin", "transfer-leader", "--to", target, "--backend", cluster.uri());
      assertThat(named.exitCode()).as(named.out() + named.err()).isZero();
      assertThat(named.out()).isEqualTo(
          "leadership moved from " + cluster.peers().get(leader).id() + " to " + target + "\n");
      assertThat(cluster.leader().map(i -> cluster.peers().get(i).id())).hasValue(target);

      Cli already = Cli.run("admin", "transfer-leader", "--to", target, "--backend", cluster.uri());
      assertThat(already.exitCode()).as(already.err()).isZero();
      assertThat(already.out()).isEqualTo("node " + target + " leads already; nothing moved\n");

      cluster.awaitLeader(PATIENCE);
      Cli picked = Cli.run("admin", "transfer-leader", "--backend", cluster.uri());
      assertThat(picked.exitCode()).as(picked.out() + picked.err()).isZero();
      assertThat(picked.out()).startsWith("leadership moved from " + target + " to ");
      assertThat(cluster.leader().map(i -> cluster.peers().get(i).id())).isPresent().get().isNotEqualTo(target);

      Cli unknown = Cli.run("admin", "transfer-leader", "--to", "n9", "--backend", cluster.uri());
      assertThat(unknown.exitCode()).isEqualTo(2);
      assertThat(unknown.err()).contains("--to must be one of the cluster's nodes (n1, n2, n3); was 'n9'");
    }
  }

  @Test
  void badUsageExits2AndAnUnreachableClusterExits1() {
    Cli notCore = Cli.run("admin", "transfer-leader", "--backend", "memory:");
    assertThat(notCore.exitCode()).isEqualTo(2);
    assertThat(notCore.err()).contains("--backend must be a core URI, leasehold://host:port");

    Cli badTimeout = Cli.run("admin", "transfer-leader", "--backend", "leasehold://127.0.0.1:1", "--timeout", "5m");
    assertThat(badTimeout.exitCode()).isEqualTo(2);
    assertThat(badTimeout.err()).contains("--timeout must be between 100ms and 1m; was 5m");

    Cli noCommand = Cli.run("admin");
    assertThat(noCommand.exitCode()).isEqualTo(2);
    assertThat(noCommand.err()).contains("transfer-leader");

    String uri = "leasehold://127.0.0.1:" + RunningCli.freePortPair();
    Cli nobody = Cli.run("admin", "transfer-leader", "--backend", uri);
    assertThat(nobody.exitCode()).isEqualTo(1);
    assertThat(nobody.err()).contains("no node of " + uri + " says it leads");
    Cli nobodyNamed = Cli.run("admin", "transfer-leader", "--to", "n1", "--backend", uri, "--timeout", "500ms");
    assertThat(nobodyNamed.exitCode()).isEqualTo(1);
    assertThat(nobodyNamed.err()).contains("no node of " + uri + " answered; nothing moved");
  }

  @Test
  void aLeadingServerStoppedHandsTheLeadershipOverFirst() {
    Path data = DevCommandTest.freshDir("handover");
    List<Integer> ports = List.of(RunningCli.freePortPair(), RunningCli.freePortPair(), RunningCli.freePortPair());
    String peers = "n1=127.0.0.1:" + ports.get(0) + ",n2=127.0.0.1:" + ports.get(1) + ",n3=127.0.0.1:" + ports.get(2);
    String uri = "leasehold://127.0.0.1:" + ports.get(0) + ",127.0.0.1:" + ports.get(1) + ",127.0.0.1:" + ports.get(2);
    List<RunningCli> servers = new ArrayList<>();
    try {
      for (int i = 1; i <= 3; i++) {
        servers.add(
            RunningCli.start(
                "server", "--id", "n" + i, "--peers", peers, "--data-dir", data.resolve("n" + i).toString(),
                "--bootstrap", "--election-timeout", "300ms"));
      }
      String[] leader = new String[1];
      await("a leader").atMost(PATIENCE).until(() -> {
        Cli status = Cli.run("status", "--backend", uri);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^leader (n\\d);").matcher(status.out());
        if (m.find()) {
          leader[0] = m.group(1);
          return true;
        }
        return false;
      });
      RunningCli old = servers.get(Integer.parseInt(leader[0].substring(1)) - 1);

      assertThat(old.stop()).as(old.err()).isZero();

      java.util.regex.Matcher handed =
          java.util.regex.Pattern.compile("leasehold server: node " + leader[0] + " handed the leadership to (n\\d)")
              .matcher(old.err());
      assertThat(handed.find()).as("the stopped leader's output:%n%s", old.err()).isTrue();
      String successor = handed.group(1);
      assertThat(successor).isNotEqualTo(leader[0]);
      Cli after = Cli.run("status", "--backend", uri, "--timeout", "500ms");
      assertThat(after.out()).as("who leads once the old leader stopped").contains("leader " + successor + ";");
    } finally {
      servers.forEach(RunningCli::close);
    }
  }

  @Test
  void snapshotSaveReportsTheFilesOwnSizeAndReplacesAFileOnlyWithForce() throws Exception {
    Path dir = DevCommandTest.freshDir("snapshot-save");
    try (LocalCluster cluster = LocalCluster.start(1, 0, dir.resolve("data"), c -> c.withElectionTimeout(Duration.ofMillis(300)))) {
      cluster.awaitLeader(PATIENCE);
      Path file = dir.resolve("core.backup");

      Cli first = await("the first save").atMost(PATIENCE)
          .until(() -> Cli.run("admin", "snapshot", "save", file.toString(), "--backend", cluster.uri()), c -> c.exitCode() == 0);

      long size = java.nio.file.Files.size(file);
      assertThat(first.out()).as("the size said is the file's").contains("(" + size + " bytes, sha256 ");
      byte[] before = java.nio.file.Files.readAllBytes(file);

      Cli again = Cli.run("admin", "snapshot", "save", file.toString(), "--backend", cluster.uri());
      assertThat(again.exitCode()).as(again.out() + again.err()).isEqualTo(2);
      assertThat(again.err()).contains("FILE " + file + " exists; --force replaces it");
      assertThat(java.nio.file.Files.readAllBytes(file)).as("kept as it was").isEqualTo(before);

      Cli forced = Cli.run("admin", "snapshot", "save", file.toString(), "--force", "--backend", cluster.uri());
      assertThat(forced.exitCode()).as(forced.out() + forced.err()).isZero();
      assertThat(forced.out()).contains("(" + java.nio.file.Files.size(file) + " bytes, sha256 ");
    }
  }
}
