package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A member whose disk was wiped, started again with {@code --join} under its own id: its
 * directory is empty, so the empty-directory rule lets it format, but the leader still lists the
 * id and sends to it as to a member with a log. It must refuse to start, and say how to come back
 * under a new id, rather than run (and vote) with a log shorter than what the id acknowledged.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class JoinUnderAMembersIdTest {

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aWipedMemberStartedWithJoinUnderItsOwnIdIsRefusedNamingReplaceNode() throws Exception {
    cluster = LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "join-own-id-"), c -> c);
    cluster.awaitLeader(Duration.ofSeconds(60));
    int wiped = (cluster.leader().orElseThrow() + 1) % 3; // a follower
    NodeConfig old = cluster.node(wiped).orElseThrow().config();
    cluster.stopNode(wiped);
    Path empty = Files.createTempDirectory(Path.of("target"), "join-own-id-wiped-");
    NodeConfig again =
        NodeConfig.of(old.self(), old.peers(), empty)
            .withElectionTimeout(old.electionTimeout())
            .withStartMode(NodeConfig.StartMode.JOIN);

    assertThatThrownBy(() -> CoreNode.start(again).close())
        .isInstanceOf(StartRefusedException.class)
        .hasMessageContaining("refuses to join")
        .hasMessageContaining("still lists " + old.self())
        .hasMessageContaining("admin replace-node " + old.self());
    try (var files = Files.list(empty)) {
      assertThat(files).as("nothing formatted").isEmpty();
    }
  }
}
