package io.leasehold.server.raft;

import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.protocol.Message;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Ratis turns a leader's lease off for a leadership move and back on when the move fails or
 * times out. The transferee was told to stand, though, and may win after that: voters grant a
 * higher term's vote without asking whether they heard a leader lately. So a move that failed on
 * this node leaves its reads (keep-alive confirmations among them) refused for one longest
 * election timeout, and a move may not be given less time than that.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class FailedMoveReadGuardTest {

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aMoveShorterThanAnElectionIsRefusedAndAFailedMoveRefusesReadsForOne() throws Exception {
    cluster = LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "failed-move-"), c -> c);
    int leader = cluster.awaitLeader(Duration.ofSeconds(60));
    CoreNode node = cluster.node(leader).orElseThrow();
    Duration longest = Duration.ofMillis(CoreNode.longestElectionTimeoutMs(node.config().electionTimeout().toMillis()));
    int target = (leader + 1) % 3;
    String targetId = cluster.peers().get(target).id();

    assertThatThrownBy(() -> node.leadership().move(Optional.of(targetId), Duration.ofMillis(1)).join())
        .hasCauseInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("timeout must be " + longest.toMillis() + " ms (the longest election timeout");
    assertThat(node.stateMachine().readsRefusedUntil()).as("a refused request moved nothing").isZero();

    cluster.stopNode(target); // a move to it cannot complete
    long before = System.nanoTime();
    assertThatThrownBy(() -> node.leadership().move(Optional.of(targetId), longest).join())
        .isInstanceOf(CompletionException.class);
    long ended = System.nanoTime();

    long until = node.stateMachine().readsRefusedUntil();
    assertThat(until - (before + longest.toNanos())).as("refused from the failure on, for a whole election").isPositive();
    assertThat(until - (ended + longest.toNanos())).as("counted from the failure").isNotPositive();
    if (System.nanoTime() - until < 0) { // a read now (unless the machine stalled past the guard)
      assertThatThrownBy(() -> node.stateMachine().query(Message.valueOf("")).join())
          .hasMessageContaining("a leadership move from this node did not complete");
    }
  }
}
