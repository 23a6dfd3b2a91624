package io.leasehold.server.raft;

import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.rpc.SupportedRpcType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review finding 1, end to end: a leader whose expiry thread stalls right after it checked that it
 * leads (as a leader paused by the OS or a GC does) is deposed; the new leader keeps the sessions
 * alive for two TTLs, so by the old leader's own clock every one of them is overdue. When the
 * stalled round resumes it must expire none of them.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class DeposedLeaderExpiryTest {

  private static final long TTL_MILLIS = 2_000;
  private static final int SESSIONS = 50;
  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private LocalCluster cluster;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
  private final AtomicLong calls = new AtomicLong();

  @AfterEach
  void close() {
    timer.shutdownNow();
    channels.forEach(ManagedChannel::shutdownNow);
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aDeposedLeaderWhoseExpiryStalledExpiresNoSessionTheNewLeaderKeptAlive() throws Exception {
    cluster =
        LocalCluster.start(
            3, 0, Files.createTempDirectory(Path.of("target"), "deposed-"), c -> c.withElectionTimeout(Duration.ofMillis(300)));
    int first = cluster.awaitLeader(PATIENCE);
    for (Peer p : cluster.peers()) {
      channels.add(NettyChannelBuilder.forAddress(p.host(), p.clientPort()).usePlaintext().build());
    }
    // Keep-alives run from the first grant on: granting them all takes a while on a busy machine.
    KeepAlives keepAlives = new KeepAlives();
    timer.scheduleWithFixedDelay(keepAlives::round, 0, TTL_MILLIS / 4, TimeUnit.MILLISECONDS);
    LeaseholdGrpc.LeaseholdBlockingStub stub = LeaseholdGrpc.newBlockingStub(channels.get(first));
    for (int i = 0; i < SESSIONS; i++) {
      long id =
          stub.withDeadlineAfter(10, TimeUnit.SECONDS)
              .grant(GrantRequest.newBuilder().setCall(call()).setOwner("holder-" + i).setTtlMillis(TTL_MILLIS).build())
              .getSessionId();
      keepAlives.add(id);
      stub.withDeadlineAfter(10, TimeUnit.SECONDS)
          .put(
              PutRequest.newBuilder()
                  .setCall(call())
                  .setKey("held/" + i)
                  .setValue(ByteString.copyFromUtf8("x"))
                  .setSessionId(id)
                  .build());
    }
    await().atMost(PATIENCE).until(() -> keepAlives.confirmedByOthersThan(-1) >= 2);

    // Stall the leader's expiry right after it found itself leading (whichever node leads now),
    // in a round that decides expiries (not the first of a term, which arms the deadlines).
    CountDownLatch stalled = new CountDownLatch(1);
    CountDownLatch resume = new CountDownLatch(1);
    AtomicInteger stalledNode = new AtomicInteger(-1);
    for (int n = 0; n < 3; n++) {
      int node = n;
      CoreNode coreNode = cluster.node(n).orElseThrow();
      coreNode.sessionExpiry()
          .afterLeadershipCheck(
              term -> {
                if (coreNode.sessionKeeper().armedTerm() == term && stalledNode.compareAndSet(-1, node)) {
                  stalled.countDown();
                  try {
                    resume.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }
              });
    }
    assertThat(stalled.await(30, TimeUnit.SECONDS)).as("the leader's expiry round started").isTrue();
    int a = stalledNode.get();
    int b = (a + 1) % 3;
    CoreNode nodeA = cluster.node(a).orElseThrow();
    long stalledRound = nodeA.sessionExpiry().ticks();
    await("the stalled leader has confirmed the sessions").atMost(PATIENCE).until(() -> keepAlives.confirmedBy(a) >= 1);

    // Meanwhile another node takes over and keeps every session alive for two TTLs, so that by
    // the stalled leader's clock each one is overdue.
    transferLeadership(b);
    int confirmedBefore = keepAlives.confirmedByOthersThan(a);
    await("the new leader confirms the sessions for two TTLs while the old one is stalled")
        .atMost(PATIENCE)
        .until(
            () ->
                keepAlives.confirmedByOthersThan(a) >= confirmedBefore + 8
                    && nodeA.sessionKeeper().overdue() == SESSIONS);

    resume.countDown();
    await("the stalled round finishes and its expiries are settled")
        .atMost(PATIENCE)
        .until(() -> nodeA.sessionExpiry().ticks() > stalledRound && nodeA.sessionExpiry().inFlight() == 0);
    int answeredAfter = keepAlives.answered();
    await("two more keep-alive rounds are answered").atMost(PATIENCE).until(() -> keepAlives.answered() >= answeredAfter + 2);

    assertThat(nodeA.sessionExpiry().dropped())
        .as("expiries the resumed round decided from its stale deadlines, and dropped (all %d, unless it led again)", SESSIONS)
        .isPositive();
    assertThat(keepAlives.gone()).as("sessions the cluster reported gone although the new leader kept them alive").isEmpty();
    for (int n = 0; n < 3; n++) {
      CoreNode node = cluster.node(n).orElseThrow();
      List<String> missing = new ArrayList<>();
      for (int i = 0; i < SESSIONS; i++) {
        if (node.localRead("held/" + i).isEmpty()) {
          missing.add("held/" + i);
        }
      }
      assertThat(missing).as("keys of live sessions deleted on node %s", node.config().self()).isEmpty();
    }
  }

  private CallId call() {
    return CallId.newBuilder().setClientIdHigh(0xDEC0DE).setClientIdLow(1).setCallId(calls.incrementAndGet()).build();
  }

  private void transferLeadership(int to) throws Exception {
    List<RaftPeer> peers = new ArrayList<>();
    for (Peer p : cluster.peers()) {
      peers.add(RaftPeer.newBuilder().setId(p.id()).setAddress(p.host() + ":" + p.raftPort()).build());
    }
    RaftProperties properties = new RaftProperties();
    RaftConfigKeys.Rpc.setType(properties, SupportedRpcType.GRPC);
    try (RaftClient admin =
        RaftClient.newBuilder()
            .setProperties(properties)
            .setRaftGroup(RaftGroup.valueOf(CoreNode.GROUP_ID, peers))
            .setClientId(ClientId.randomId())
            .build()) {
      RaftClientReply reply = admin.admin().transferLeadership(RaftPeerId.valueOf(cluster.peers().get(to).id()), 20_000);
      assertThat(reply.isSuccess()).as("leadership transferred: %s", reply).isTrue();
    }
    await().atMost(PATIENCE).until(() -> cluster.node(to).orElseThrow().isLeaderReady());
  }

  /** Keeps the sessions alive through whichever node leads, every TTL/4, and records answers. */
  private final class KeepAlives {
    private final List<Long> ids = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Map<Integer, StreamObserver<KeepAliveRequest>> streams = new ConcurrentHashMap<>();
    private final Map<Integer, AtomicInteger> confirmed = new ConcurrentHashMap<>();
    private final Set<Long> gone = ConcurrentHashMap.newKeySet();
    private final AtomicInteger answered = new AtomicInteger();
    private long sequence;

    void add(long id) {
      ids.add(id);
    }

    void round() {
      try {
        send();
      } catch (RuntimeException e) {
        e.printStackTrace(); // a scheduled task that throws is never run again
      }
    }

    private void send() {
      int leader = cluster.leader().orElse(-1);
      if (leader < 0 || ids.isEmpty()) {
        return;
      }
      StreamObserver<KeepAliveRequest> stream = streams.computeIfAbsent(leader, this::open);
      KeepAliveRequest request = KeepAliveRequest.newBuilder().setSequence(++sequence).addAllSessionIds(ids).build();
      try {
        stream.onNext(request);
      } catch (RuntimeException e) {
        streams.remove(leader, stream);
      }
    }

    private StreamObserver<KeepAliveRequest> open(int node) {
      return LeaseholdGrpc.newStub(channels.get(node))
          .keepAlive(
              new StreamObserver<>() {
                @Override
                public void onNext(KeepAliveResponse response) {
                  gone.addAll(response.getGoneList());
                  answered.incrementAndGet();
                  if (response.getAliveCount() == SESSIONS) {
                    confirmed.computeIfAbsent(node, n -> new AtomicInteger()).incrementAndGet();
                  }
                }

                @Override
                public void onError(Throwable t) {
                  streams.remove(node);
                }

                @Override
                public void onCompleted() {
                  streams.remove(node);
                }
              });
    }

    int confirmedBy(int node) {
      AtomicInteger n = confirmed.get(node);
      return n == null ? 0 : n.get();
    }

    int confirmedByOthersThan(int node) {
      int sum = 0;
      for (Map.Entry<Integer, AtomicInteger> e : confirmed.entrySet()) {
        if (e.getKey() != node) {
          sum += e.getValue().get();
        }
      }
      return sum;
    }

    int answered() {
      return answered.get();
    }

    Set<Long> gone() {
      return Set.copyOf(gone);
    }
  }
}
