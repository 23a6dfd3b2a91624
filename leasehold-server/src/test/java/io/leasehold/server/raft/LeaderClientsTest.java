package io.leasehold.server.raft;

import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.apache.ratis.protocol.RaftPeerId;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node forwards each call through a Ratis client that starts at the leader the node names now
 * ({@link LeaderClients}), not at the one its client last heard of: after a hand-over, a follower
 * that forwarded nothing meanwhile still has a client naming the old leader, and Ratis would learn
 * the new one only from refusals (with a random member tried when the old one names none). Reads
 * and writes go through clients of their own.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class LeaderClientsTest {

  private static final Duration PATIENCE = Duration.ofSeconds(30);

  @TempDir Path root;

  @Test
  void aFollowerForwardsThroughAClientThatStartsAtTheLeaderItNames() throws Exception {
    try (LocalCluster cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(300)))) {
      int first = cluster.awaitLeader(PATIENCE);
      RaftPeerId firstId = id(cluster, first);
      List<Integer> followers = IntStream.range(0, 3).filter(i -> i != first).boxed().toList();
      for (int f : followers) {
        CoreNode node = cluster.node(f).orElseThrow();
        await().atMost(PATIENCE).until(() -> firstId.equals(node.division().getInfo().getLeaderId()));
        assertThat(node.forwardingClients().current().getLeaderId()).as("forwards to the leader").isEqualTo(firstId);
        // Ratis's ordered client sends a call only after the earlier ones: a read held at a
        // follower must not hold up the writes behind it (RaftGateway#readClient).
        assertThat(node.readingClients().current())
            .as("reads go through a client of their own")
            .isNotSameAs(node.forwardingClients().current());
        assertThat(node.readingClients().current().getLeaderId()).as("reads go to the leader").isEqualTo(firstId);
      }

      // A hand-over can fail on a busy machine (no peer caught up in time): ask again until one lands.
      AtomicReference<String> successor = new AtomicReference<>();
      await()
          .atMost(PATIENCE)
          .until(() -> {
            CoreNode old = cluster.node(first).orElseThrow();
            if (old.isLeader()) {
              old.handOverLeadership(Duration.ofSeconds(5)).ifPresent(successor::set);
            } else { // it lost the leadership meanwhile: whoever leads now is the next leader
              cluster.leader().ifPresent(l -> successor.set(id(cluster, l).toString()));
            }
            return successor.get() != null;
          });
      RaftPeerId next = RaftPeerId.valueOf(successor.get());
      // The follower that stays one: its client so far names the old leader and was told nothing since.
      int stays = followers.stream().filter(f -> !id(cluster, f).equals(next)).findFirst().orElseThrow();
      CoreNode node = cluster.node(stays).orElseThrow();
      await().atMost(PATIENCE).until(() -> next.equals(node.division().getInfo().getLeaderId()));
      assertThat(node.forwardingClients().current().getLeaderId()).as("forwards to the new leader").isEqualTo(next);
      assertThat(node.readingClients().current().getLeaderId()).as("reads go to the new leader").isEqualTo(next);

      Peer peer = cluster.peers().get(stays);
      ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
      try {
        long session =
            LeaseholdGrpc.newBlockingStub(channel)
                .withDeadlineAfter(PATIENCE.toSeconds(), TimeUnit.SECONDS)
                .grant(
                    GrantRequest.newBuilder()
                        .setCall(CallId.newBuilder().setClientIdHigh(0x1EAD).setClientIdLow(1).setCallId(1))
                        .setOwner("forwarded")
                        .setTtlMillis(10_000)
                        .build())
                .getSessionId();
        assertThat(session).as("a call forwarded after the move is answered").isPositive();
      } finally {
        channel.shutdownNow();
      }
      assertThat(node.forwardingClients().leaders()).contains(firstId, next);
    }
  }

  private static RaftPeerId id(LocalCluster cluster, int node) {
    return RaftPeerId.valueOf(cluster.peers().get(node).id());
  }
}
