package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Finding 7 of the safety review: keep-alives and reads are confirmed from the Raft leader lease,
 * which assumes the same election timeout on every node. Two nodes that start at the same moment
 * cannot see each other's settings before they start; the running nodes must find the
 * disagreement and stop answering reads until it is gone.
 *
 * <p>n1 and n2 are real nodes (200 ms); n3 is a stand-in that answers only {@code Status}, first
 * with 100 ms (a node that started while the others could not be asked), then with 200 ms (that
 * node started again with the right value). Until it answers, n1 and n2 serve as a majority.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
@Tag("integration")
class ElectionTimeoutAgreementTest {

  private static final Duration TIMEOUT = Duration.ofMillis(200);
  private static final Duration DETECTED = Duration.ofSeconds(20);

  @TempDir Path root;

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  @Test
  void aNodeWithAnotherElectionTimeoutIsReportedAndNoReadIsServedUntilItAgrees() throws Exception {
    List<Peer> peers = new ArrayList<>();
    while (peers.size() < 3) {
      int port = LocalCluster.freePortPair();
      if (peers.stream().allMatch(p -> Math.abs(p.clientPort() - port) > 1)) {
        peers.add(new Peer("n" + (peers.size() + 1), "127.0.0.1", port));
      }
    }
    CoreNode n1 = start("n1", peers);
    CoreNode n2 = start("n2", peers);
    LeaseholdGrpc.LeaseholdBlockingStub[] nodes = {stub(peers.get(0)), stub(peers.get(1))};
    await().atMost(DETECTED).until(() -> n1.isLeaderReady() || n2.isLeaderReady());
    // Writes go through the log, not the lease: retried with the same call id, granted once.
    GrantRequest grant =
        GrantRequest.newBuilder()
            .setCall(CallId.newBuilder().setClientIdHigh(System.nanoTime()).setClientIdLow(17).setCallId(1))
            .setOwner("test")
            .setTtlMillis(60_000)
            .build();
    long session =
        await().atMost(DETECTED).ignoreExceptions().until(() -> nodes[0].grant(grant).getSessionId(), id -> id > 0);
    for (LeaseholdGrpc.LeaseholdBlockingStub node : nodes) {
      await().atMost(DETECTED).ignoreExceptions().until(() -> get(node) != null);
      NodeStatus status = nodeStatus(node);
      assertThat(status.getElectionTimeoutMs()).isEqualTo(200);
      assertThat(status.getSettingsMismatch()).isEmpty();
    }
    assertThat(keepAlive(peers.get(0), session).get(10, TimeUnit.SECONDS).getAliveList()).containsExactly(session);

    Server n3 = fakeNode(peers.get(2), 100);

    String problem =
        "election timeouts disagree: %s (this node) runs with 200ms, n3 100ms; refusing reads and keep-alives, which"
            + " rest on the Raft leader lease that assumes every node has the same --election-timeout, until they agree";
    for (int i = 0; i < 2; i++) {
      LeaseholdGrpc.LeaseholdBlockingStub node = nodes[i];
      String self = "n" + (i + 1);
      await().atMost(DETECTED).until(() -> nodeStatus(node).getSettingsMismatch(), m -> !m.isEmpty());
      assertThat(nodeStatus(node).getSettingsMismatch()).isEqualTo(problem.formatted(self));
    }
    // Each node may have served a read between its poll and the other's; from now on none does.
    for (LeaseholdGrpc.LeaseholdBlockingStub node : nodes) {
      assertThatThrownBy(() -> get(node))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE))
          .hasMessageContaining("election timeouts disagree");
    }
    assertThatThrownBy(() -> keepAlive(peers.get(1), session).get(10, TimeUnit.SECONDS))
        .hasMessageContaining("election timeouts disagree");

    n3.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    fakeNode(peers.get(2), 200);

    for (LeaseholdGrpc.LeaseholdBlockingStub node : nodes) {
      await().atMost(DETECTED).until(() -> nodeStatus(node).getSettingsMismatch(), String::isEmpty);
      await().atMost(DETECTED).ignoreExceptions().until(() -> get(node) != null);
    }
  }

  private CoreNode start(String id, List<Peer> peers) {
    CoreNode node =
        CoreNode.start(
            NodeConfig.of(id, peers, root.resolve(id))
                .withElectionTimeout(TIMEOUT)
                .withStartMode(NodeConfig.StartMode.BOOTSTRAP));
    open.add(node);
    return node;
  }

  private LeaseholdGrpc.LeaseholdBlockingStub stub(Peer peer) {
    ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
    open.add(channel::shutdownNow);
    return LeaseholdGrpc.newBlockingStub(channel).withDeadlineAfter(1, TimeUnit.MINUTES);
  }

  private static Object get(LeaseholdGrpc.LeaseholdBlockingStub node) {
    return node.withDeadlineAfter(5, TimeUnit.SECONDS).get(GetRequest.newBuilder().setKey("k").build());
  }

  private static NodeStatus nodeStatus(LeaseholdGrpc.LeaseholdBlockingStub node) {
    return node.withDeadlineAfter(5, TimeUnit.SECONDS)
        .status(StatusRequest.newBuilder().setNodeOnly(true).build())
        .getNodes(0);
  }

  private CompletableFuture<KeepAliveResponse> keepAlive(Peer peer, long session) {
    ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
    open.add(channel::shutdownNow);
    CompletableFuture<KeepAliveResponse> answer = new CompletableFuture<>();
    StreamObserver<KeepAliveRequest> requests =
        LeaseholdGrpc.newStub(channel)
            .keepAlive(
                new StreamObserver<>() {
                  @Override
                  public void onNext(KeepAliveResponse response) {
                    answer.complete(response);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {
                    answer.completeExceptionally(new IllegalStateException("the keep-alive stream ended"));
                  }
                });
    requests.onNext(KeepAliveRequest.newBuilder().setSequence(1).addSessionIds(session).build());
    return answer;
  }

  /** A node that answers only {@code Status}, saying it runs with {@code electionTimeoutMillis}. */
  private Server fakeNode(Peer peer, long electionTimeoutMillis) throws IOException {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress(peer.host(), peer.clientPort()))
            .addService(
                new LeaseholdGrpc.LeaseholdImplBase() {
                  @Override
                  public void status(StatusRequest request, StreamObserver<StatusResponse> out) {
                    out.onNext(
                        StatusResponse.newBuilder()
                            .addNodes(
                                NodeStatus.newBuilder()
                                    .setId(peer.id())
                                    .setRole("FOLLOWER")
                                    .setElectionTimeoutMs(electionTimeoutMillis))
                            .build());
                    out.onCompleted();
                  }
                })
            .build()
            .start();
    open.add(server::shutdownNow);
    return server;
  }
}
