package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A planned stop waits for the calls the node holds ({@link CoreNode#awaitCallsAnswered}) before
 * it closes and cancels them. "Holds" must cover every way a call waits inside a node: a write on
 * its way through the leader's log, and one a follower forwarded to a leader (the calls a leader
 * takes while it hands over are forwarded so). Each test makes a node hold one such write by taking
 * the cluster's quorum away, checks the node does not count as done, then gives the quorum back
 * and checks the wait ends once the call is answered. (A forwarded read holds a forwarding permit
 * the same way, but a read with no quorum is refused at once, so no test holds one here.)
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
@Tag("integration")
class CallsAnsweredTest {

  private static final Duration PATIENCE = Duration.ofSeconds(30);
  /** Long enough for an unanswered call to show; the call itself would wait up to ten seconds. */
  private static final Duration SHORT_WAIT = Duration.ofMillis(300);

  @TempDir Path root;
  private LocalCluster cluster;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @AfterEach
  void close() {
    channels.forEach(ManagedChannel::shutdownNow);
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aLeaderWaitsForAWriteOnItsWayThroughTheLog() throws Exception {
    cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(300)));
    int leader = cluster.awaitLeader(PATIENCE);
    holdsAWriteUntilTheOthersReturn(leader, "a write the leader cannot commit");
  }

  @Test
  void aFollowerWaitsForAWriteItForwarded() throws Exception {
    cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(300)));
    int leader = cluster.awaitLeader(PATIENCE);
    holdsAWriteUntilTheOthersReturn(othersThan(leader).get(0), "a write forwarded to no leader");
  }

  /**
   * Stops the nodes other than {@code held}, sends {@code held} a write, and checks that the node
   * counts it unanswered until the others are back, then answered.
   */
  private void holdsAWriteUntilTheOthersReturn(int held, String what) throws Exception {
    List<Integer> others = othersThan(held);
    // A node grants no session before it has applied the cluster's identity (a follower, a
    // moment after the leader): the grant must be held for want of a leader, not refused.
    CompletableFuture<Void> identity = cluster.node(held).orElseThrow().clusterIdentityApplied();
    await("the node knows the cluster's identity").atMost(PATIENCE).until(identity::isDone);
    others.forEach(cluster::stopNode);

    Future<GrantResponse> grant =
        stub(held)
            .withDeadlineAfter(60, TimeUnit.SECONDS)
            .grant(GrantRequest.newBuilder().setCall(call(1)).setOwner("held").setTtlMillis(10_000).build());
    CoreNode node = cluster.node(held).orElseThrow();
    awaitHeld(node);
    assertThat(node.awaitCallsAnswered(SHORT_WAIT)).as(what + " is unanswered").isFalse();
    assertThat(grant).isNotDone();

    others.forEach(cluster::startNode);
    assertThat(node.awaitCallsAnswered(PATIENCE)).as(what + " is answered once the others are back").isTrue();
    assertThat(grant.get(PATIENCE.toSeconds(), TimeUnit.SECONDS).getSessionId()).isPositive();
  }

  /** The call travels to the node on its own: wait until the node has taken it. */
  private static void awaitHeld(CoreNode node) {
    await("the node holds the call").atMost(PATIENCE).until(() -> !node.awaitCallsAnswered(Duration.ZERO));
  }

  private List<Integer> othersThan(int node) {
    return IntStream.range(0, 3).filter(i -> i != node).boxed().toList();
  }

  private LeaseholdGrpc.LeaseholdFutureStub stub(int node) {
    Peer peer = cluster.peers().get(node);
    ManagedChannel channel = NettyChannelBuilder.forAddress(peer.host(), peer.clientPort()).usePlaintext().build();
    channels.add(channel);
    return LeaseholdGrpc.newFutureStub(channel);
  }

  private static CallId call(long id) {
    return CallId.newBuilder().setClientIdHigh(0xCA11).setClientIdLow(1).setCallId(id).build();
  }
}
