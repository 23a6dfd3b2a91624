package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.AddNodeRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.Member;
import io.leasehold.core.proto.MembersRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An add-node call names one node, and the server checks that itself (the CLI is one client of
 * many): an address with a comma in it used to be split as a {@code --peers} list, and the node
 * before the comma was added, with no word about the rest.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class AddNodeArgumentTest {

  @TempDir Path root;

  @Test
  void anAddressThatNamesTwoNodesIsRefusedAndChangesNothing() {
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, c -> c)) {
      Peer peer = cluster.peers().get(cluster.awaitLeader(Duration.ofSeconds(30)));
      ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
      try {
        LeaseholdGrpc.LeaseholdBlockingStub stub = LeaseholdGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
        AddNodeRequest twoNodes = AddNodeRequest.newBuilder()
            .setId("n4")
            .setAddress("127.0.0.1:7006,n5=127.0.0.1:7008")
            .setTimeoutMs(1_000)
            .build();

        assertThatExceptionOfType(StatusRuntimeException.class)
            .isThrownBy(() -> stub.addNode(twoNodes))
            .satisfies(e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription()).contains("names more than one node");
            });
        assertThat(stub.members(MembersRequest.getDefaultInstance()).getMembersList())
            .extracting(Member::getId)
            .containsExactly(peer.id());
      } finally {
        channel.shutdownNow();
      }
    }
  }
}
