package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node whose Raft server Ratis closes by itself says so, so that the process running it can
 * stop (`leasehold server` exits 1) instead of serving nothing for ever. Ratis does this to a node
 * the cluster tells it is no member (found in the stop-18 fault runs: a joining node whose
 * division had closed ran on and could never be added), after a long JVM pause, and on an apply
 * error; here the division is closed behind the node's back, as Ratis does.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class StoppedOnItsOwnTest {

  @TempDir Path root;

  @Test
  void aNodeWhoseRaftServerRatisClosedSaysWhyAndAPlannedStopSaysNothing() throws Exception {
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(100)))) {
      cluster.awaitLeader(Duration.ofSeconds(30));
      CoreNode node = cluster.node(0).orElseThrow();

      node.division().close();

      assertThat(node.stoppedOnItsOwn().get(30, TimeUnit.SECONDS))
          .startsWith("its Raft server stopped by itself, so it serves nothing more")
          .contains("--join under a new --id");
    }
  }

  @Test
  void aPlannedStopIsNotStoppingOnItsOwn() throws Exception {
    CoreNode node;
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(100)))) {
      cluster.awaitLeader(Duration.ofSeconds(30));
      node = cluster.node(0).orElseThrow();
    }
    // close() closed the same state machine; the node did not stop "on its own".
    assertThat(node.stoppedOnItsOwn()).isNotDone();
  }
}
