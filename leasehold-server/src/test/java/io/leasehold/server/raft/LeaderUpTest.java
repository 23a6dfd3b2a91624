package io.leasehold.server.raft;

import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.ratis.proto.RaftProtos.FollowerInfoProto;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.proto.RaftProtos.ServerRpcProto;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.util.LifeCycle;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a node's forwarding client takes for "a leader is up", which decides whether it pauses
 * briefly or the whole backoff between attempts ({@link RaftGateway#forwardRetryPolicy}): every
 * node while a leader serves; not a follower that still names a leader gone quiet (each does until
 * its election timeout); every node again under the next leader. First on a real cluster, then
 * case by case on a division's view.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
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

  @Test
  void aFollowerCountsItsLeaderUpOnlyIfItHeardFromItWithinTheBound() {
    assertThat(RaftGateway.leaderUp(follower("n1", 100), 225)).as("heard 100 ms ago").isTrue();
    assertThat(RaftGateway.leaderUp(follower("n1", 300), 225)).as("heard 300 ms ago").isFalse();
    assertThat(RaftGateway.leaderUp(follower(null, 10), 225)).as("names no leader").isFalse();
    assertThat(RaftGateway.leaderUp(info(RaftPeerRole.FOLLOWER, "n1", false, RoleInfoProto.getDefaultInstance()), 225))
        .as("no record of hearing from it")
        .isFalse();
    assertThat(RaftGateway.leaderUp(info(RaftPeerRole.CANDIDATE, "n1", false, RoleInfoProto.getDefaultInstance()), 225))
        .as("a candidate")
        .isFalse();
  }

  @Test
  void aLeaderCountsItselfUpOnceReady() {
    assertThat(RaftGateway.leaderUp(info(RaftPeerRole.LEADER, "n2", true, RoleInfoProto.getDefaultInstance()), 225)).isTrue();
    assertThat(RaftGateway.leaderUp(info(RaftPeerRole.LEADER, "n2", false, RoleInfoProto.getDefaultInstance()), 225))
        .as("elected, first entry not yet committed")
        .isFalse();
  }

  @Test
  void theBoundIsThreeQuartersOfTheShortestElectionTimeout() {
    // An idle leader's heartbeat comes half a timeout after the follower's last answer.
    assertThat(RaftGateway.leaderHeardWithinMs(Duration.ofMillis(300))).isEqualTo(225);
  }

  private static DivisionInfo follower(String leader, long heardMsAgo) {
    RoleInfoProto role =
        RoleInfoProto.newBuilder()
            .setFollowerInfo(
                FollowerInfoProto.newBuilder().setLeaderInfo(ServerRpcProto.newBuilder().setLastRpcElapsedTimeMs(heardMsAgo)))
            .build();
    return info(RaftPeerRole.FOLLOWER, leader, false, role);
  }

  /** A division's view with only what {@link RaftGateway#leaderUp(DivisionInfo, long)} reads. */
  private static DivisionInfo info(RaftPeerRole role, String leader, boolean ready, RoleInfoProto roleInfo) {
    return new DivisionInfo() {
      @Override public RaftPeerRole getCurrentRole() { return role; }
      @Override public boolean isLeaderReady() { return ready; }
      @Override public RaftPeerId getLeaderId() { return leader == null ? null : RaftPeerId.valueOf(leader); }
      @Override public LifeCycle.State getLifeCycleState() { return LifeCycle.State.RUNNING; }
      @Override public RoleInfoProto getRoleInfoProto() { return roleInfo; }
      @Override public long getCurrentTerm() { return 1; }
      @Override public long getLastAppliedIndex() { return 0; }
      @Override public long[] getFollowerNextIndices() { return new long[0]; }
      @Override public long[] getFollowerMatchIndices() { return new long[0]; }
    };
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
