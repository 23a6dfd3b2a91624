package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.leasehold.Lease;
import io.leasehold.Ticker;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.TransferLeaderRequest;
import io.leasehold.core.proto.TransferLeaderResponse;
import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Planned moves of the leadership: an operator's {@code TransferLeader} and the
 * hand-over of a leader stopped for maintenance, on a real 3-node core, with a lease held
 * throughout — which must neither be lost nor go to anyone else.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class LeadershipTransferTest {

  private static final Duration TTL = Duration.ofSeconds(5);
  private static final Duration PATIENCE = Duration.ofSeconds(30);

  private static LocalCluster cluster;
  private final List<AutoCloseable> closeLater = new ArrayList<>();

  @BeforeAll
  static void startCluster() throws Exception {
    Path root = Files.createTempDirectory(Path.of("target"), "transfer-");
    cluster = LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(500)));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
  }

  @Test
  void theNamedNodeLeadsAfterTheMove() throws Exception {
    int leader = cluster.awaitLeader(PATIENCE);
    int target = (leader + 1) % 3;
    String targetId = id(target);

    TransferLeaderResponse moved = transfer(allNodes(), targetId).get(20, TimeUnit.SECONDS);

    assertThat(moved.getPreviousLeader()).isEqualTo(id(leader));
    assertThat(moved.getLeader()).isEqualTo(targetId);
    await("node " + targetId + " leads and serves").atMost(PATIENCE).until(() -> node(target).isLeaderReady());
  }

  @Test
  void withoutATargetTheLeaderPicksAFollowerAndAFollowerRefusesNamingTheLeader() throws Exception {
    int leader = cluster.awaitLeader(PATIENCE);
    int follower = (leader + 2) % 3;

    assertThatThrownBy(() -> transfer(only(follower), "").get(20, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .satisfies(
            e -> {
              Status s = Status.fromThrowable(e.getCause());
              assertThat(s.getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
              assertThat(s.getDescription()).contains("(" + id(leader) + " does)");
            });

    TransferLeaderResponse moved = transfer(only(leader), "").get(20, TimeUnit.SECONDS);
    assertThat(moved.getPreviousLeader()).isEqualTo(id(leader));
    assertThat(moved.getLeader()).isNotEqualTo(id(leader));
    await("the picked node leads").atMost(PATIENCE).until(() -> cluster.leader().map(this::id).orElse("").equals(moved.getLeader()));
  }

  @Test
  void badRequestsAreRefusedNamingTheFieldAndMoveNothing() throws Exception {
    int leader = cluster.awaitLeader(PATIENCE);
    long term = node(leader).term();

    assertThatThrownBy(() -> transfer(allNodes(), "n9").get(20, TimeUnit.SECONDS))
        .satisfies(
            e -> {
              Status s = Status.fromThrowable(e.getCause());
              assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(s.getDescription()).startsWith("to must be one of the cluster's nodes (n1, n2, n3); was 'n9'");
            });
    TransferLeaderRequest tooLong = TransferLeaderRequest.newBuilder().setTo(id(leader)).setTimeoutMs(60_001).build();
    try (CoreClient c = new CoreClient(allNodes(), Duration.ofSeconds(10))) {
      assertThatThrownBy(() -> c.<TransferLeaderResponse>call((s, o) -> s.transferLeader(tooLong, o)).get(20, TimeUnit.SECONDS))
          .satisfies(
              e -> {
                Status s = Status.fromThrowable(e.getCause());
                assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
                assertThat(s.getDescription()).startsWith("timeout_ms must be 0 (the default, 5000) to 60000; was 60001");
              });
    }
    // Asking the leader to lead is a move that is already done.
    assertThat(transfer(allNodes(), id(leader)).get(20, TimeUnit.SECONDS).getLeader()).isEqualTo(id(leader));
    assertThat(cluster.leader()).hasValue(leader);
    assertThat(node(leader).term()).as("the term: no election happened").isEqualTo(term);
  }

  @Test
  void writesSentToTheLeaderWhileAMoveWaitsAreAnsweredNotRefused() throws Exception {
    int leader = cluster.awaitLeader(PATIENCE);
    int target = (leader + 1) % 3;
    // Only the leader's endpoint: a refusal cannot be hidden by the client trying another node.
    CoreClient c = new CoreClient(only(leader), Duration.ofSeconds(10));
    closeLater.add(c);
    cluster.stopNode(target);
    try {
      put(c, "behind-the-stopped-node").get(20, TimeUnit.SECONDS);
      // A move to a node that is down: Ratis waits for it to catch up, refusing writes meanwhile
      // (as for any move, only longer), until the move's timeout.
      TransferLeaderRequest toStopped = TransferLeaderRequest.newBuilder().setTo(id(target)).setTimeoutMs(1_500).build();
      CoreClient mover = new CoreClient(only(leader), Duration.ofSeconds(15));
      closeLater.add(mover);
      java.util.concurrent.CompletableFuture<TransferLeaderResponse> move = mover.call((s, o) -> s.transferLeader(toStopped, o));
      int sent = 0;
      while (!move.isDone()) {
        // Back to back until the move ends: once it reaches the leader, the next write waits it out.
        String key = "while-the-move-waits-" + sent++;
        assertThat(put(c, key).get(20, TimeUnit.SECONDS).getKv().getKey()).as("write %d during the move", sent).isEqualTo(key);
      }

      assertThat(sent).as("writes sent during the move").isPositive();
      assertThatThrownBy(() -> move.get(20, TimeUnit.SECONDS)).as("the move to a stopped node").isInstanceOf(ExecutionException.class);
      assertThat(cluster.leader()).as("who leads after the failed move").hasValue(leader);
    } finally {
      cluster.startNode(target);
    }
  }

  private static java.util.concurrent.CompletableFuture<PutResponse> put(CoreClient c, String key) {
    PutRequest put = PutRequest.newBuilder().setCall(c.newCall()).setKey(key).setValue(ByteString.copyFromUtf8("v")).build();
    return c.call((s, o) -> s.put(put, o));
  }

  @Test
  void aLeaseHeldThroughRepeatedMovesIsNeitherLostNorHandedOn() throws Exception {
    cluster.awaitLeader(PATIENCE);
    CoreFixture.CoreContender holderProcess = contender();
    Lease held = lease(holderProcess, "moved-under", "holder");
    Lease other = lease(contender(), "moved-under", "other");
    LossRecorder losses = new LossRecorder(Ticker.system());
    held.onLost(losses);
    assertThat(held.acquire().get(20, TimeUnit.SECONDS)).isTrue();
    long token = held.fencingToken().orElseThrow();

    for (int move = 0; move < 4; move++) {
      int leader = cluster.awaitLeader(PATIENCE);
      int target = (leader + 1 + move % 2) % 3;
      moveLeadership(id(target));
      assertThat(other.acquire().get(20, TimeUnit.SECONDS)).as("another owner's acquire after move %d", move).isFalse();
      assertThat(held.checkAlive()).as("the holder's checkAlive() after move %d", move).isTrue();
    }

    // Past a whole TTL after the last move: the renewals went on through the new leaders.
    long until = System.nanoTime() + TTL.toNanos();
    await("a TTL after the last move").atMost(PATIENCE).until(() -> System.nanoTime() - until > 0);
    assertThat(held.checkAlive()).as("the holder's checkAlive() a TTL after the last move").isTrue();
    assertThat(held.fencingToken()).hasValue(token);
    assertThat(losses.count()).as("losses of the holder").isZero();
    assertThat(other.acquire().get(20, TimeUnit.SECONDS)).as("another owner's acquire at the end").isFalse();
  }

  @Test
  void aLeaderStoppedForMaintenanceHandsOverFirstAndTheLeaseStaysHeld() throws Exception {
    CoreFixture.CoreContender holderProcess = contender();
    Lease held = lease(holderProcess, "maintenance", "holder");
    LossRecorder losses = new LossRecorder(Ticker.system());
    held.onLost(losses);
    assertThat(held.acquire().get(20, TimeUnit.SECONDS)).isTrue();
    int leader = cluster.awaitLeader(PATIENCE);

    long termBefore = node(leader).term();
    String successor = node(leader).handOverLeadership(Duration.ofSeconds(10)).orElseThrow();
    assertThat(successor).isNotEqualTo(id(leader));
    assertThat(cluster.leader().map(this::id)).as("who leads right after the hand-over").hasValue(successor);
    // The old leader waits until the new leader's first entry is committed (it has applied it):
    // it does not stop while the new leader still needs its vote, or its CPU and disk.
    assertThat(node(leader).appliedTerm()).as("the term of the old leader's last applied entry").isGreaterThan(termBefore);
    cluster.stopNode(leader);
    try {
      long until = System.nanoTime() + TTL.toNanos();
      await("a TTL after the stop").atMost(PATIENCE).until(() -> System.nanoTime() - until > 0);
      assertThat(held.checkAlive()).as("the holder's checkAlive() a TTL after its leader stopped").isTrue();
      assertThat(losses.count()).isZero();
      // A node that does not lead has nothing to hand over.
      int now = cluster.awaitLeader(PATIENCE);
      int follower = now == (leader + 1) % 3 ? (leader + 2) % 3 : (leader + 1) % 3;
      assertThat(node(follower).handOverLeadership(Duration.ofSeconds(1))).isEmpty();
    } finally {
      cluster.startNode(leader);
    }
  }

  /**
   * Moves the leadership to {@code to}, asking again (at most three times) when Ratis answers that
   * the move timed out: a target that another test stopped and started may still be catching up
   * (seen once in a clean-clone run, "TIMED_OUT(4.999s)"). What the caller checks is the lease
   * through the moves, not the move's first try.
   */
  private void moveLeadership(String to) throws Exception {
    for (int attempt = 1; ; attempt++) {
      try {
        transfer(allNodes(), to).get(20, TimeUnit.SECONDS);
        return;
      } catch (ExecutionException e) {
        if (attempt == 3 || !String.valueOf(e.getCause().getMessage()).contains("Failed to transfer leadership")) {
          throw e;
        }
      }
    }
  }

  private java.util.concurrent.CompletableFuture<TransferLeaderResponse> transfer(List<InetSocketAddress> via, String to) {
    CoreClient client = new CoreClient(via, Duration.ofSeconds(15));
    closeLater.add(client);
    TransferLeaderRequest request = TransferLeaderRequest.newBuilder().setTo(to).build();
    return client.call((s, o) -> s.transferLeader(request, o));
  }

  private static List<InetSocketAddress> allNodes() {
    return CoreFixture.endpoints(cluster.peers());
  }

  private static List<InetSocketAddress> only(int node) {
    return List.of(allNodes().get(node));
  }

  private String id(int node) {
    return cluster.peers().get(node).id();
  }

  private static CoreNode node(int i) {
    return cluster.node(i).orElseThrow();
  }

  private CoreFixture.CoreContender contender() {
    CoreFixture.CoreContender c = new CoreFixture.CoreContender(cluster.peers());
    closeLater.add(c);
    return c;
  }

  private Lease lease(CoreFixture.CoreContender process, String name, String owner) {
    Lease lease = process.backend().newLease(SuiteSettings.forTtl(name, owner, TTL).acquireRetries(5).build());
    closeLater.add(lease);
    return lease;
  }
}
