package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code leasehold status} against a real 3-node cluster in this JVM. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class StatusCommandTest {

  private static final Pattern ROW =
      Pattern.compile("(?m)^(\\S+) +(\\S+:\\d+) +(LEADER|FOLLOWER|CANDIDATE|LISTENER|UNREACHABLE) +(\\S+) +(\\S+)");

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster =
        LocalCluster.start(3, 0, DevCommandTest.freshDir("status"), c -> c.withElectionTimeout(Duration.ofMillis(150)));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void statusListsEveryNodeWithExactlyOneLeader() {
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      Cli run = Cli.run("status", "--backend", cluster.uri());

      assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
      List<String[]> rows = rows(run.out());
      assertThat(rows).extracting(r -> r[0]).containsExactly("n1", "n2", "n3");
      assertThat(rows).extracting(r -> r[1]).containsExactlyElementsOf(cluster.peers().stream().map(Peer::clientEndpoint).toList());
      assertThat(rows).filteredOn(r -> r[2].equals("LEADER")).hasSize(1);
      assertThat(rows).filteredOn(r -> r[2].equals("FOLLOWER")).hasSize(2);
      String leader = rows.stream().filter(r -> r[2].equals("LEADER")).findFirst().orElseThrow()[0];
      assertThat(run.out()).containsPattern("leader " + leader + "; sessions \\d+, keys \\d+, held leases \\d+");
    });
  }

  @Test
  void statusCountsTheLeasesHeld() throws Exception {
    try (LeaseBackend backend = LeaseBackend.open(cluster.uri());
        Lease lease = backend.newLease(LeaseSettings.builder("status-test", "test").ttl(Duration.ofSeconds(15)).build())) {
      assertThat(lease.acquire().get(20, TimeUnit.SECONDS)).isTrue();

      // Until a leader answers: on a loaded machine an election may be under way.
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        Cli run = Cli.run("status", "--backend", cluster.uri());

        assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
        Matcher counts = Pattern.compile("sessions (\\d+), keys (\\d+), held leases (\\d+)").matcher(run.out());
        assertThat(counts.find()).as(run.out()).isTrue();
        assertThat(Long.parseLong(counts.group(1))).isGreaterThanOrEqualTo(1);
        assertThat(Long.parseLong(counts.group(2))).isGreaterThanOrEqualTo(1);
        assertThat(Long.parseLong(counts.group(3))).isEqualTo(1);
      });
    }
  }

  /** Through a follower alone, the cluster has a leader, just not one asked. */
  @Test
  void statusThroughAFollowerSaysTheLeaderIsNotAmongTheNodesAsked() {
    // ignoreExceptions: no leader at this moment (an election on a loaded machine) is a retry.
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions().untilAsserted(() -> {
      int leader = cluster.leader().orElseThrow();
      String follower = "leasehold://" + cluster.peers().get((leader + 1) % 3).clientEndpoint();

      Cli run = Cli.run("status", "--backend", follower);

      assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
      assertThat(run.out())
          .contains("leader: not among the nodes asked (they read the counts through it); sessions ")
          .doesNotContain("no leader");
    });
  }

  @Test
  void aStoppedNodeIsUnreachableAndTheOthersStillAnswer() {
    int leader = cluster.leader().orElseThrow();
    int stopped = (leader + 1) % 3;
    cluster.stopNode(stopped);
    try {
      // Until the two left agree on a leader: on a loaded machine the leader may have moved
      // between leader() and stopNode(), and an election takes a while.
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        Cli run = Cli.run("status", "--backend", cluster.uri(), "--timeout", "1s");

        assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
        List<String[]> rows = rows(run.out());
        assertThat(rows).hasSize(3);
        String[] down = rows.get(stopped);
        assertThat(down[1]).isEqualTo(cluster.peers().get(stopped).clientEndpoint());
        assertThat(down[2]).isEqualTo("UNREACHABLE");
        assertThat(IntStream.range(0, 3).filter(i -> i != stopped).mapToObj(rows::get))
            .extracting(r -> r[2])
            .containsOnly("LEADER", "FOLLOWER")
            .contains("LEADER");
      });
    } finally {
      cluster.startNode(stopped);
    }
  }

  @Test
  void whenNoNodeAnswersStatusFailsAndSaysSo() {
    String uri = "leasehold://127.0.0.1:" + RunningCli.freePortPair();

    Cli run = Cli.run("status", "--backend", uri, "--timeout", "500ms");

    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.out()).contains("UNREACHABLE");
    assertThat(run.err()).contains("leasehold status: no node of " + uri + " answered. Is the cluster running, and"
        + " are these its nodes' client ports?");
  }

  @Test
  void theDefaultBackendIsTheEnvironmentsElseTheOneDevStartsByDefault() {
    assertThat(Backends.DEV_URI).isEqualTo(Backends.devUri(Backends.DEV_NODES, Backends.DEV_PORT));
    assertThat(Backends.defaultUri(Map.of())).isEqualTo("leasehold://127.0.0.1:7000,127.0.0.1:7002,127.0.0.1:7004");
    assertThat(Backends.defaultUri(Map.of(Backends.ENV, " leasehold://db:7000 "))).isEqualTo("leasehold://db:7000");
    assertThat(Backends.defaultUri(Map.of(Backends.ENV, " "))).isEqualTo(Backends.DEV_URI);
  }

  private static List<String[]> rows(String out) {
    Matcher m = ROW.matcher(out);
    List<String[]> rows = new java.util.ArrayList<>();
    while (m.find()) {
      rows.add(new String[] {m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)});
    }
    return rows;
  }
}
