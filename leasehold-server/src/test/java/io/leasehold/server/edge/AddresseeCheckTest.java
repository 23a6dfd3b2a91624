package io.leasehold.server.edge;

import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.proto.RaftProtos.AppendEntriesReplyProto;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.RaftGroupIdProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.grpc.RaftServerProtocolServiceGrpc;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.io.grpc.ManagedChannel;
import org.apache.ratis.thirdparty.io.grpc.ManagedChannelBuilder;
import org.apache.ratis.thirdparty.io.grpc.Status;
import org.apache.ratis.thirdparty.io.grpc.stub.StreamObserver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node takes Raft messages addressed to it only. Found by the fault harness (seed 1905): a
 * leader elected while a removal was still joint kept sending entries to the removed node
 * {@code n1g1} for its whole term (Ratis drops the removed peers' senders only when it completes a
 * change itself); the node started on that address as {@code n1g2}, with {@code --join}, took them
 * as its own — Ratis checks only the group — started its election timer, found itself in no
 * configuration, and closed its Raft server for good, so it could never be added. A message for
 * another node can as well be a vote or an acknowledgement counted for a node that is gone.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class AddresseeCheckTest {

  @TempDir Path root;

  private CoreNode node;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (node != null) {
      node.close();
    }
  }

  @Test
  void aJoiningNodeRefusesEntriesAddressedToTheNodeThatHadItsAddressBefore() throws Exception {
    Peer self = new Peer("n1g2", "127.0.0.1", LocalCluster.freePortPair());
    node = CoreNode.start(NodeConfig.of("n1g2", List.of(self), root.resolve("n1g2")).withStartMode(NodeConfig.StartMode.JOIN));
    channel = ManagedChannelBuilder.forAddress("127.0.0.1", self.raftPort()).usePlaintext().build();

    Outcome stale = appendEntries("n1g1");

    assertThat(stale.refusal())
        .as("entries for n1g1, sent to the address n1g2 has now (reply: %s)", stale.reply())
        .isNotNull()
        .satisfies(s -> assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION))
        .satisfies(s -> assertThat(s.getDescription()).contains("addressed to n1g1", "this is node n1g2"));
    assertThat(node.term()).as("the joining node took no term from the stale leader").isZero();

    // The same message addressed to the node itself is taken: the refusal was for the addressee.
    Outcome own = appendEntries("n1g2");
    assertThat(own.refusal()).as("a message addressed to n1g2 itself").isNull();
    assertThat(own.reply()).isNotNull();
    assertThat(node.term()).isEqualTo(LEADER_TERM);
  }

  private static final long LEADER_TERM = 7;

  /** What a heartbeat from leader {@code n3} addressed to {@code to} came back with. */
  private record Outcome(AppendEntriesReplyProto reply, Status refusal) {}

  private Outcome appendEntries(String to) throws Exception {
    CompletableFuture<Outcome> outcome = new CompletableFuture<>();
    StreamObserver<AppendEntriesRequestProto> requests =
        RaftServerProtocolServiceGrpc.newStub(channel).appendEntries(new StreamObserver<>() {
          @Override
          public void onNext(AppendEntriesReplyProto reply) {
            outcome.complete(new Outcome(reply, null));
          }

          @Override
          public void onError(Throwable t) {
            outcome.complete(new Outcome(null, Status.fromThrowable(t)));
          }

          @Override
          public void onCompleted() {
            outcome.complete(new Outcome(null, null));
          }
        });
    requests.onNext(AppendEntriesRequestProto.newBuilder()
        .setServerRequest(RaftRpcRequestProto.newBuilder()
            .setRequestorId(ByteString.copyFromUtf8("n3"))
            .setReplyId(ByteString.copyFromUtf8(to))
            .setRaftGroupId(RaftGroupIdProto.newBuilder().setId(CoreNode.GROUP_ID.toByteString()))
            .setCallId(1))
        .setLeaderTerm(LEADER_TERM)
        .setLeaderCommit(-1)
        .setInitializing(false)
        .build());
    try {
      return outcome.get(Duration.ofSeconds(30).toMillis(), TimeUnit.MILLISECONDS);
    } finally {
      requests.onCompleted();
    }
  }
}
