package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The relay in front of a fake node: unary and streaming calls pass through with their headers,
 * deadline and cancellation; while its copier is on, each unary write is sent once more, bytes
 * unchanged, and the copy's answer is judged against the original's; while off, none is.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class CallRelayTest {

  private static final Metadata.Key<String> PROBE = Metadata.Key.of("x-probe", Metadata.ASCII_STRING_MARSHALLER);

  private final FakeNode node = new FakeNode();
  private Server server;
  private LateCopies copies;
  private CallRelay relay;
  private ManagedChannel channel;
  private LeaseholdGrpc.LeaseholdBlockingStub stub;

  @BeforeEach
  void start() throws IOException {
    ServerInterceptor seeHeaders = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        node.probes.add(String.valueOf(headers.get(PROBE)));
        Context ctx = Context.current();
        node.deadlines.add(ctx.getDeadline() != null);
        return Contexts.interceptCall(ctx, call, headers, next);
      }
    };
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(ServerInterceptors.intercept(node, seeHeaders))
        .build()
        .start();
    InetSocketAddress at = new InetSocketAddress("127.0.0.1", server.getPort());
    copies = new LateCopies("c1", Map.of("n1", at), Duration.ofMillis(500), 7);
    relay = CallRelay.open("c1->n1", at, copies);
    channel = CallRelay.channelTo(new InetSocketAddress("127.0.0.1", relay.port()));
    Metadata probe = new Metadata();
    probe.put(PROBE, "p");
    stub = LeaseholdGrpc.newBlockingStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(probe));
  }

  @AfterEach
  void stop() {
    channel.shutdownNow();
    relay.close();
    copies.close();
    server.shutdownNow();
  }

  private static PutRequest put(long callId) {
    return PutRequest.newBuilder()
        .setCall(CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(callId))
        .setKey("/k/" + callId)
        .build();
  }

  @Test
  void forwardsUnaryAndStreamingCallsWithHeadersDeadlinesAndCancellation() {
    GetResponse got = stub.withDeadlineAfter(5, TimeUnit.SECONDS).get(GetRequest.newBuilder().setKey("/a").build());
    assertThat(got.getKvs(0).getKey()).isEqualTo("/a");
    PutResponse put = stub.withDeadlineAfter(5, TimeUnit.SECONDS).put(put(1));
    assertThat(put.getKv().getKey()).isEqualTo("/k/1");
    assertThat(node.probes).containsOnly("p");
    assertThat(node.deadlines).containsOnly(true);

    // Server streaming, then a failure status passed back as it was.
    Iterator<WatchResponse> watch = stub.withDeadlineAfter(5, TimeUnit.SECONDS).watch(WatchRequest.newBuilder().setKey("/w").build());
    List<Long> revisions = new ArrayList<>();
    watch.forEachRemaining(w -> revisions.add(w.getCompactRevision()));
    assertThat(revisions).containsExactly(1L, 2L, 3L);
    assertThat(node.lastWatchCancelled.get()).isFalse();

    // Both ways: every request answered on the stream, in order.
    List<Long> echoed = new CopyOnWriteArrayList<>();
    AtomicBoolean completed = new AtomicBoolean();
    StreamObserver<KeepAliveRequest> out = LeaseholdGrpc.newStub(channel).keepAlive(new StreamObserver<>() {
      @Override
      public void onNext(KeepAliveResponse r) {
        echoed.add(r.getSequence());
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {
        completed.set(true);
      }
    });
    for (long s = 1; s <= 5; s++) {
      out.onNext(KeepAliveRequest.newBuilder().setSequence(s).build());
    }
    out.onCompleted();
    await().atMost(Duration.ofSeconds(10)).untilTrue(completed);
    assertThat(echoed).containsExactly(1L, 2L, 3L, 4L, 5L);

    // A stream the client cancels is cancelled at the node too.
    io.grpc.Context.CancellableContext ctx = Context.current().withCancellation();
    AtomicReference<Iterator<WatchResponse>> endless = new AtomicReference<>();
    ctx.run(() -> endless.set(stub.watch(WatchRequest.newBuilder().setKey("/endless").build())));
    assertThat(endless.get().next().getCompactRevision()).isEqualTo(1);
    ctx.cancel(null);
    await().atMost(Duration.ofSeconds(10)).untilTrue(node.lastWatchCancelled);

    // Errors come back with their code and message.
    assertThat(org.assertj.core.api.Assertions.catchThrowable(
            () -> stub.delete(DeleteRequest.newBuilder().setKey("/refused").build())))
        .isInstanceOf(io.grpc.StatusRuntimeException.class)
        .hasMessageContaining("FAILED_PRECONDITION: no such thing");
    assertThat(copies.tally()).isEqualTo(LateCopies.Tally.NONE);
  }

  @Test
  void whileOnEachWriteIsSentOnceMoreUnchangedAndWhileOffNone() {
    copies.on();
    for (long c = 1; c <= 5; c++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).put(put(c));
    }
    stub.withDeadlineAfter(5, TimeUnit.SECONDS).get(GetRequest.newBuilder().setKey("/read").build()); // no write
    await().atMost(Duration.ofSeconds(20)).until(() -> copies.pending() == 0 && node.puts.size() == 10);
    for (long c = 1; c <= 5; c++) {
      List<PutRequest> seen = node.byCall.get(c);
      assertThat(seen).as("call %d", c).hasSize(2);
      assertThat(seen.get(1).toByteString()).isEqualTo(seen.get(0).toByteString());
    }
    // The fake node keeps its replies, as the core does: every copy got the original's answer.
    assertThat(copies.tally()).isEqualTo(new LateCopies.Tally(5, 5, 0, 0, 0));
    assertThat(node.gets.get()).isEqualTo(1);

    copies.off();
    for (long c = 6; c <= 8; c++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).put(put(c));
    }
    assertThat(copies.pending()).as("no copy made while off").isZero();
    assertThat(copies.tally().made()).isEqualTo(5);
    assertThat(node.puts).hasSize(13);
  }

  @Test
  void aCopyAppliedAgainOrRefusedAsTooLateIsToldApart() {
    node.forgetful.set(true); // a new answer for every copy: no dedup
    copies.on();
    for (long c = 1; c <= 3; c++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).put(put(c));
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> copies.pending() == 0 && node.puts.size() == 6);
    assertThat(copies.tally()).isEqualTo(new LateCopies.Tally(3, 0, 0, 3, 0));

    node.forgetful.set(false);
    node.tooLate.set(true); // the core's TOO_LATE for every copy
    copies.on();
    for (long c = 4; c <= 5; c++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).put(put(c));
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> copies.pending() == 0 && node.puts.size() == 10);
    assertThat(copies.tally()).isEqualTo(new LateCopies.Tally(2, 0, 2, 0, 0));
    copies.off();
  }

  /** A node that keeps a reply per call id (or, forgetful, makes a new one each time). */
  private static final class FakeNode extends LeaseholdGrpc.LeaseholdImplBase {
    final List<String> probes = new CopyOnWriteArrayList<>();
    final List<Boolean> deadlines = new CopyOnWriteArrayList<>();
    final List<PutRequest> puts = new CopyOnWriteArrayList<>();
    final Map<Long, List<PutRequest>> byCall = new ConcurrentHashMap<>();
    final Map<Long, PutResponse> replies = new ConcurrentHashMap<>();
    final AtomicLong revision = new AtomicLong();
    final AtomicLong gets = new AtomicLong();
    final AtomicBoolean forgetful = new AtomicBoolean();
    final AtomicBoolean tooLate = new AtomicBoolean();
    final AtomicBoolean lastWatchCancelled = new AtomicBoolean();

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> out) {
      gets.incrementAndGet();
      out.onNext(GetResponse.newBuilder().addKvs(KeyValue.newBuilder().setKey(request.getKey())).build());
      out.onCompleted();
    }

    @Override
    public void put(PutRequest request, StreamObserver<PutResponse> out) {
      long call = request.getCall().getCallId();
      List<PutRequest> seen = byCall.computeIfAbsent(call, c -> Collections.synchronizedList(new ArrayList<>()));
      seen.add(request);
      boolean copy = seen.size() > 1;
      if (copy && tooLate.get()) {
        puts.add(request);
        out.onError(Status.DEADLINE_EXCEEDED.withDescription("call " + call + " was applied already; not applied again")
            .asRuntimeException());
        return;
      }
      PutResponse reply = forgetful.get() || !replies.containsKey(call)
          ? PutResponse.newBuilder().setKv(KeyValue.newBuilder().setKey(request.getKey()).setModRevision(revision.incrementAndGet())).build()
          : replies.get(call);
      replies.putIfAbsent(call, reply);
      puts.add(request);
      out.onNext(reply);
      out.onCompleted();
    }

    @Override
    public void delete(DeleteRequest request, StreamObserver<DeleteResponse> out) {
      out.onError(Status.FAILED_PRECONDITION.withDescription("no such thing").asRuntimeException());
    }

    @Override
    public void watch(WatchRequest request, StreamObserver<WatchResponse> out) {
      ServerCallStreamObserver<WatchResponse> o = (ServerCallStreamObserver<WatchResponse>) out;
      lastWatchCancelled.set(false);
      o.setOnCancelHandler(() -> lastWatchCancelled.set(true));
      if (request.getKey().equals("/endless")) {
        o.onNext(WatchResponse.newBuilder().setCompactRevision(1).build());
        return; // open until cancelled
      }
      for (long r = 1; r <= 3; r++) {
        o.onNext(WatchResponse.newBuilder().setCompactRevision(r).build());
      }
      o.onCompleted();
    }

    @Override
    public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(KeepAliveRequest r) {
          out.onNext(KeepAliveResponse.newBuilder().setSequence(r.getSequence()).build());
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }
}
