package io.leasehold.server;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.ratis.protocol.RaftPeerId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a node's forwarding client takes for "a leader is up", which decides whether it pauses
 * briefly or the whole backoff between attempts ({@link RaftGateway#forwardRetryPolicy}): every
 * node while a leader serves; not a follower that still names a leader gone quiet (each does until
 * its election timeout); every node again under the next leader.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LeaderUpTest {

  @TempDir Path root;

  @Test
  void followersCountALeaderUpWhileTheyHearFromItAndNotAfter() throws IOException {
    // A long election timeout: the followers name the stopped leader for longer than stopping it
    // takes (about a second), so the stretch after stopNode returns is there to be seen.
    try (LocalCluster cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofSeconds(2)))) {
      int leader = cluster.awaitLeader(Duration.ofSeconds(60));
      await().atMost(Duration.ofSeconds(30)).until(() -> allUp(cluster, List.of(0, 1, 2)));

      RaftPeerId stopped = cluster.node(leader).orElseThrow().division().getInfo().getLeaderId();
      cluster.stopNode(leader);
      List<Integer> followers = IntStream.range(0, 3).filter(i -> i != leader).boxed().toList();
      await()
          .pollInterval(Duration.ofMillis(10))
          .atMost(Duration.ofSeconds(30))
          .alias("a follower that still names the stopped leader, and does not count it up")
          .until(() -> followers.stream().anyMatch(i -> namesButDoesNotCountUp(cluster.node(i).orElseThrow(), stopped)));

      cluster.awaitLeader(Duration.ofSeconds(60));
      await().atMost(Duration.ofSeconds(30)).until(() -> allUp(cluster, followers));
    }
  }

  private static boolean namesButDoesNotCountUp(CoreNode node, RaftPeerId stopped) {
    try {
      return stopped.equals(node.division().getInfo().getLeaderId()) && !node.leaderUp();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static boolean allUp(LocalCluster cluster, List<Integer> nodes) {
    return nodes.stream().allMatch(i -> cluster.node(i).orElseThrow().leaderUp());
  }
}
