package io.leasehold.server;

import io.leasehold.server.raft.RaftGateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The leader submits its clients' writes to its Raft server on the thread that has them
 * ({@link RaftGateway}), not through Ratis's client executor: that hand-off costs two thread
 * switches per write, which at one write in flight is a large part of what a write costs on 2
 * cores. Ratis names that executor's threads {@code <node id>-client-thread<n>} and starts them on
 * first use, so a leader whose writes took the hand-off has one.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class SubmitOnCallerThreadTest {

  @TempDir Path root;

  @Test
  void aLeadersWritesNeverWakeRatissClientExecutor() {
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, c -> c)) {
      int leader = cluster.awaitLeader(Duration.ofSeconds(30));
      Peer peer = cluster.peers().get(leader);
      assertThat(clientExecutorThreads(peer))
          .as("none before the writes (Ratis starts them on first use), so one after them means a write took the hand-off")
          .isEmpty();
      ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
      try {
        for (int call = 1; call <= 20; call++) {
          long session =
              LeaseholdGrpc.newBlockingStub(channel)
                  .withDeadlineAfter(30, TimeUnit.SECONDS)
                  .grant(
                      GrantRequest.newBuilder()
                          .setCall(CallId.newBuilder().setClientIdHigh(0x5B17).setClientIdLow(1).setCallId(call))
                          .setOwner("writer-" + call)
                          .setTtlMillis(10_000)
                          .build())
                  .getSessionId();
          assertThat(session).as("grant %d answered", call).isPositive();
        }
      } finally {
        channel.shutdownNow();
      }
      assertThat(clientExecutorThreads(peer)).as("threads of Ratis's client executor on the leader").isEmpty();
    }
  }

  private static List<String> clientExecutorThreads(Peer node) {
    String prefix = node.id() + "-client-thread";
    return Thread.getAllStackTraces().keySet().stream().map(Thread::getName).filter(n -> n.startsWith(prefix)).toList();
  }
}
