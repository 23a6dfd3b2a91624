package io.leasehold.server;

import io.leasehold.server.replicated.CoreState;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each limit of {@link Limits} at its boundary, on a real node: the last allowed request passes,
 * the first one over is refused with {@code RESOURCE_EXHAUSTED} naming the flag and its value,
 * nothing changes, and another client is still served meanwhile.
 */
@Timeout(120)
@Tag("integration")
class LimitsTest {

  private static final int KEYS = 3;
  private static final int KEY_BYTES = 16;
  private static final int VALUE_BYTES = Limits.LEAST_VALUE_BYTES;
  private static final int WATCHERS = 2;
  private static final int BACKLOG = 20;
  private static final int IN_FLIGHT = Limits.LEAST_IN_FLIGHT;

  private static LocalCluster cluster;
  private static ManagedChannel other;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeAll
  static void startNode() throws Exception {
    Limits limits =
        new Limits(KEYS, KEY_BYTES, VALUE_BYTES, WATCHERS, BACKLOG, IN_FLIGHT);
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "limits-"), c -> c.withLimits(limits));
    cluster.awaitLeader(Duration.ofSeconds(60));
    other = channel(NettyChannelBuilder.forAddress(host(), port()));
  }

  @AfterAll
  static void stopNode() {
    if (other != null) {
      other.shutdownNow();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @AfterEach
  void closeChannels() {
    channels.forEach(ManagedChannel::shutdownNow);
  }

  private static String host() {
    return cluster.peers().get(0).host();
  }

  private static int port() {
    return cluster.peers().get(0).clientPort();
  }

  private static ManagedChannel channel(NettyChannelBuilder builder) {
    return builder.usePlaintext().build();
  }

  /** A connection of its own, closed after the test. */
  private ManagedChannel connection() {
    ManagedChannel c = channel(NettyChannelBuilder.forAddress(host(), port()));
    channels.add(c);
    return c;
  }

  private static LeaseholdGrpc.LeaseholdBlockingStub stub(ManagedChannel c) {
    return LeaseholdGrpc.newBlockingStub(c).withDeadlineAfter(60, TimeUnit.SECONDS);
  }

  private static void assertExhausted(Runnable call, String... says) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).as("%s", e.getStatus()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(e.getStatus().getDescription()).contains(says);
            });
  }

  /** Another client, on its own connection, is served while one is refused. */
  private static void othersAreServed(String key) {
    stub(other).put(PutRequest.newBuilder().setKey(key).setValue(ByteString.copyFromUtf8("x")).build());
    assertThat(stub(other).get(GetRequest.newBuilder().setKey(key).build()).getKvsCount()).isEqualTo(1);
  }

  private static boolean exists(String key) {
    return stub(other).get(GetRequest.newBuilder().setKey(key).build()).getKvsCount() > 0;
  }

  @Test
  void aSessionHoldsAtMostMaxKeysPerSession() {
    var s = stub(connection());
    long session = s.grant(GrantRequest.newBuilder().setTtlMillis(60_000).build()).getSessionId();
    for (int i = 0; i < KEYS; i++) {
      s.put(PutRequest.newBuilder().setKey("ks/" + i).setSessionId(session).build());
    }

    String says = "--max-keys-per-session allows (" + KEYS + ")";
    assertExhausted(() -> s.put(PutRequest.newBuilder().setKey("ks/over").setSessionId(session).build()), says, "nothing was written");
    assertExhausted(
        () -> s.compareAndSet(CompareAndSetRequest.newBuilder().setKey("ks/cas").setSessionId(session).build()), says);
    assertExhausted(
        () -> s.acquire(AcquireRequest.newBuilder().setName("ks-lease").setHolder("h").setRequestId(1).setSessionId(session).build()),
        says);
    BatchResponse batch =
        s.batch(BatchRequest.newBuilder()
            .addOps(BatchOp.newBuilder().setPut(PutRequest.newBuilder().setKey("ks/batch").setSessionId(session)))
            .addOps(BatchOp.newBuilder().setPut(PutRequest.newBuilder().setKey("ks/free")))
            .build());
    assertThat(batch.getResults(0).getError().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(batch.getResults(0).getError().getMessage()).contains(says);
    assertThat(batch.getResults(1).hasResponse()).as("the batch's other op").isTrue();
    othersAreServed("ks-other");

    assertThat(exists("ks/over") || exists("ks/cas") || exists("ks/batch") || exists(CoreState.LEASE_PREFIX + "ks-lease"))
        .as("a refused write left something")
        .isFalse();
    // Rewriting a key the session has adds none, and a key without a session is not counted.
    s.put(PutRequest.newBuilder().setKey("ks/0").setValue(ByteString.copyFromUtf8("again")).setSessionId(session).build());
    s.put(PutRequest.newBuilder().setKey("ks/unattached").build());
    // Below the limit again, the session takes a key.
    s.delete(DeleteRequest.newBuilder().setKey("ks/1").build());
    s.put(PutRequest.newBuilder().setKey("ks/over").setSessionId(session).build());
    assertThat(exists("ks/over")).isTrue();
  }

  @Test
  void keysAndValuesAreAtMostTheirBytes() {
    var s = stub(connection());
    String longest = "k".repeat(KEY_BYTES);
    s.put(PutRequest.newBuilder().setKey(longest).setValue(ByteString.copyFrom(new byte[VALUE_BYTES])).build());
    s.put(PutRequest.newBuilder().setKey("é".repeat(KEY_BYTES / 2)).build()); // 2 bytes each

    String keySays = "over --max-key-bytes " + KEY_BYTES;
    String tooLong = "k".repeat(KEY_BYTES + 1);
    assertExhausted(() -> s.put(PutRequest.newBuilder().setKey(tooLong).build()), "the key is 17 bytes of UTF-8", keySays);
    assertExhausted(() -> s.put(PutRequest.newBuilder().setKey("é".repeat(KEY_BYTES / 2) + "k").build()), keySays);
    assertExhausted(() -> s.compareAndSet(CompareAndSetRequest.newBuilder().setKey(tooLong).build()), keySays);
    assertExhausted(() -> s.delete(DeleteRequest.newBuilder().setKey(tooLong).build()), keySays);
    assertExhausted(() -> s.get(GetRequest.newBuilder().setKey(tooLong).build()), keySays, "nothing was read");
    String valueSays = "the value is " + (VALUE_BYTES + 1) + " bytes, over --max-value-bytes " + VALUE_BYTES;
    ByteString tooBig = ByteString.copyFrom(new byte[VALUE_BYTES + 1]);
    assertExhausted(() -> s.put(PutRequest.newBuilder().setKey("v").setValue(tooBig).build()), valueSays);
    assertExhausted(() -> s.compareAndSet(CompareAndSetRequest.newBuilder().setKey("v").setValue(tooBig).build()), valueSays);
    othersAreServed("kv-other");
    assertThat(exists("v")).as("a refused write left something").isFalse();

    // A named lease's key is bounded by the lease-name rule, not --max-key-bytes: it can be read.
    String leaseKey = CoreState.LEASE_PREFIX + "n".repeat(200);
    assertThat(s.get(GetRequest.newBuilder().setKey(leaseKey).build()).getKvsCount()).isZero();
  }

  /** A watch on {@code prefix} that keeps what it gets; requests messages only as told. */
  private static final class Watcher implements ClientResponseObserver<WatchRequest, WatchResponse> {
    final List<Event> events = new CopyOnWriteArrayList<>();
    final CompletableFuture<Status> ended = new CompletableFuture<>();
    final CompletableFuture<ClientCallStreamObserver<WatchRequest>> call = new CompletableFuture<>();
    private final boolean reads;

    Watcher(boolean reads) {
      this.reads = reads;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
      if (!reads) {
        requestStream.disableAutoRequestWithInitial(0); // takes no message until told
      }
      call.complete(requestStream);
    }

    @Override
    public void onNext(WatchResponse value) {
      events.addAll(value.getEventsList());
    }

    @Override
    public void onError(Throwable t) {
      ended.complete(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      ended.complete(Status.OK);
    }

    void cancel() {
      call.join().cancel("done", null);
    }
  }

  private static Watcher watch(ManagedChannel c, String prefix, boolean reads) {
    Watcher w = new Watcher(reads);
    LeaseholdGrpc.newStub(c).watch(WatchRequest.newBuilder().setKey(prefix).setPrefix(true).build(), w);
    return w;
  }

  /**
   * Waits until the node has the watches: each sees a put (made again until it does, as a watch
   * starts from the node's next change after the node has it), or ended.
   */
  private static void awaitWatching(String prefix, Watcher... watchers) {
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      stub(other).put(PutRequest.newBuilder().setKey(prefix + "mark").build());
      for (Watcher w : watchers) {
        if (w.events.isEmpty() && !w.ended.isDone()) {
          return false;
        }
      }
      return true;
    });
    for (Watcher w : watchers) {
      assertThat(w.events).as("events seen by a watch that ended with %s", w.ended.getNow(null)).isNotEmpty();
    }
  }

  /** {@return whether a watch opens on {@code c} (not refused); it is closed again} */
  private static boolean opens(ManagedChannel c, String prefix) {
    Watcher w = watch(c, prefix, true);
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      stub(other).put(PutRequest.newBuilder().setKey(prefix + "mark").build());
      return !w.events.isEmpty() || w.ended.isDone();
    });
    w.cancel();
    return !w.events.isEmpty();
  }

  @Test
  void aConnectionHasAtMostMaxWatchersPerConnection() {
    ManagedChannel c = connection();
    List<Watcher> open = new ArrayList<>();
    for (int i = 0; i < WATCHERS; i++) {
      open.add(watch(c, "w/", true));
    }
    awaitWatching("w/", open.toArray(Watcher[]::new));

    Watcher refused = watch(c, "w/", true);
    Status status = refused.ended.orTimeout(60, TimeUnit.SECONDS).join();
    assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).contains("--max-watchers-per-connection allows (" + WATCHERS + ")");
    // Another connection watches; the open watches still get events.
    assertThat(opens(other, "w/elsewhere/")).as("a watch on another connection opens").isTrue();
    int seen = open.get(0).events.size();
    stub(other).put(PutRequest.newBuilder().setKey("w/more").build());
    await().atMost(Duration.ofSeconds(60)).until(() -> open.get(0).events.size() > seen);

    // One closed, one may open (the node counts the cancel when it arrives).
    open.get(0).cancel();
    await().atMost(Duration.ofSeconds(60)).until(() -> opens(c, "w/again/"));
  }

  /** {@return the keys of the events, the test's marks left out} */
  private static List<String> keys(List<Event> events) {
    return events.stream().map(e -> e.getKv().getKey()).filter(k -> !k.endsWith("/mark")).toList();
  }

  /** A keep-alive stream kept open (a call in flight), answered once so the node has it. */
  private static StreamObserver<KeepAliveRequest> openKeepAlive(ManagedChannel c) {
    CompletableFuture<KeepAliveResponse> answered = new CompletableFuture<>();
    StreamObserver<KeepAliveRequest> out =
        LeaseholdGrpc.newStub(c).keepAlive(new StreamObserver<>() {
          @Override
          public void onNext(KeepAliveResponse value) {
            answered.complete(value);
          }

          @Override
          public void onError(Throwable t) {
            answered.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {}
        });
    out.onNext(KeepAliveRequest.newBuilder().setSequence(1).build());
    answered.orTimeout(60, TimeUnit.SECONDS).join();
    return out;
  }

  @Test
  void aConnectionHasAtMostMaxInFlightPerConnectionCalls() {
    ManagedChannel c = connection();
    List<StreamObserver<KeepAliveRequest>> open = new ArrayList<>();
    for (int i = 0; i < IN_FLIGHT - 1; i++) {
      open.add(openKeepAlive(c));
    }
    stub(c).put(PutRequest.newBuilder().setKey("f/last").build()); // the last call that fits

    open.add(openKeepAlive(c));
    String says = "--max-in-flight-per-connection allows (" + IN_FLIGHT + ")";
    assertExhausted(() -> stub(c).put(PutRequest.newBuilder().setKey("f/over").build()), says, "nothing was done");
    assertExhausted(() -> stub(c).get(GetRequest.newBuilder().setKey("f/last").build()), says);
    othersAreServed("f-other");
    assertThat(exists("f/over")).as("a refused write left something").isFalse();

    // One ends, and the next call fits (the node counts the end when it arrives).
    open.remove(0).onCompleted();
    await().atMost(Duration.ofSeconds(60)).ignoreExceptions()
        .untilAsserted(() -> stub(c).put(PutRequest.newBuilder().setKey("f/over").build()));
    assertThat(exists("f/over")).isTrue();
    open.forEach(StreamObserver::onCompleted);
  }

  @Test
  void aWatcherThatDoesNotReadIsEndedWhenItFallsBehindByMoreThanMaxWatchBacklog() {
    // A small window, so that the node's buffers for this connection fill after a few events.
    ManagedChannel slowChannel = channel(NettyChannelBuilder.forAddress(host(), port()).flowControlWindow(16 * 1024));
    channels.add(slowChannel);
    Watcher slow = watch(slowChannel, "slow/", false);
    // The slow one takes one message, so the test knows the node has it.
    slow.call.join().request(1);
    awaitWatching("slow/", slow);

    ByteString value = ByteString.copyFrom(new byte[1024]);
    int puts = 300; // ~300 KiB: far past the 16 KiB window, gRPC's 32 KiB and 20 events
    // Keys in the order of their revisions (a batch's ops are applied in no fixed order).
    java.util.TreeMap<Long, String> byRevision = new java.util.TreeMap<>();
    for (int batch = 0; batch < 3; batch++) {
      BatchRequest.Builder b = BatchRequest.newBuilder();
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < puts / 3; i++) {
        String key = "slow/" + batch + "-" + i;
        b.addOps(BatchOp.newBuilder().setPut(PutRequest.newBuilder().setKey(key).setValue(value)));
        keys.add(key);
      }
      // Another client is served: nothing waits for the slow watcher.
      List<io.leasehold.core.proto.BatchResult> results = stub(other).batch(b.build()).getResultsList();
      assertThat(results).allMatch(r -> r.hasResponse());
      for (int i = 0; i < keys.size(); i++) {
        try {
          byRevision.put(PutResponse.parseFrom(results.get(i).getResponse()).getKv().getModRevision(), keys.get(i));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
          throw new AssertionError(e);
        }
      }
    }
    List<String> written = List.copyOf(byRevision.values());
    assertThat(slow.ended).as("the slow watch ended before it read").isNotDone();

    // Now it reads: what the node handed on before it ended the watch, then the status.
    slow.call.join().request(Integer.MAX_VALUE);
    Status status = slow.ended.orTimeout(60, TimeUnit.SECONDS).join();
    assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription())
        .contains("the watcher fell behind by " + (BACKLOG + 1) + " events, over --max-watch-backlog " + BACKLOG);
    // Nothing was dropped silently: the events it got are the first ones in order, and the
    // revision it is told to watch again from is the one after the last it got.
    List<Event> got = slow.events;
    List<String> gotKeys = keys(got);
    assertThat(gotKeys.size()).as("events the slow watcher got").isLessThan(puts).isGreaterThan(0);
    assertThat(gotKeys).isEqualTo(written.subList(0, gotKeys.size()));
    long next = got.get(got.size() - 1).getKv().getModRevision() + 1;
    assertThat(status.getDescription()).endsWith("watch again from revision " + next);
    // Resuming from there gives the rest.
    Watcher resumed = new Watcher(true);
    LeaseholdGrpc.newStub(slowChannel)
        .watch(WatchRequest.newBuilder().setKey("slow/").setPrefix(true).setStartRevision(next).build(), resumed);
    await().atMost(Duration.ofSeconds(60)).until(() -> keys(resumed.events).size() >= puts - gotKeys.size());
    assertThat(keys(resumed.events)).isEqualTo(written.subList(gotKeys.size(), written.size()));
    resumed.cancel();
  }
}
