package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.SaveSnapshotRequest;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.TransferLeaderRequest;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz test of the client protocol at the edge (docs/testing.md, "Fuzzing"): arbitrary bytes,
 * decoded as each request message the core accepts, sent to a real single-node core in this JVM
 * through its gRPC service, as a client's call arrives. Every call ends either with an answer, or
 * with one of the statuses the protocol documents (a refusal with {@code INVALID_ARGUMENT}, or
 * {@code RESOURCE_EXHAUSTED} over a limit, that says why); never with {@code UNKNOWN} or {@code
 * INTERNAL} (an exception that escaped), never with the node unable to serve. A refused write never reaches the log (counted by the node,
 * after a barrier write of the test's own that is answered once applied).
 *
 * <p>Input: one byte choosing the request kind, then the request's bytes. Bytes that are not a
 * valid message of that kind are skipped: gRPC refuses them before the service sees them.
 */
@Timeout(300)
@Tag("integration")
class ClientRequestFuzzTest {

  /** What a call may end with besides OK: the statuses the service documents. */
  private static final Set<Status.Code> DOCUMENTED =
      Set.of(
          Status.Code.INVALID_ARGUMENT,
          Status.Code.RESOURCE_EXHAUSTED,
          Status.Code.NOT_FOUND,
          Status.Code.FAILED_PRECONDITION,
          Status.Code.DEADLINE_EXCEEDED);

  private static OneNodeCore core;

  @BeforeAll
  static void startNode() throws Exception {
    // The most sessions per identity: a long fuzzing run grants more than the default (10,000)
    // with one identity, and a grant refused over it is refused by the log (it writes an entry),
    // which refusedAtTheEdge would take for a write after an edge refusal.
    core = OneNodeCore.start("fuzz-requests-", c -> c.withAccess(new AccessSettings(null, AccessSettings.MAX_SESSIONS_PER_IDENTITY)));
  }

  @AfterAll
  static void stopNode() {
    if (core != null) {
      core.close();
    }
  }

  private static LeaseholdGrpc.LeaseholdBlockingStub stub() {
    return core.stub();
  }

  private static long writes() {
    return core.writes();
  }

  @FuzzTest
  void everyRequestIsAnsweredOrRefusedWithADocumentedStatus(byte[] input) throws Exception {
    if (input.length == 0) {
      return;
    }
    byte[] message = Arrays.copyOfRange(input, 1, input.length);
    long writesBefore = writes();
    try {
      switch ((input[0] & 0xFF) % 14) {
        case 0 -> unary(() -> stub().grant(GrantRequest.parseFrom(message)), writesBefore);
        case 1 -> unary(() -> stub().revoke(RevokeRequest.parseFrom(message)), writesBefore);
        case 2 -> unary(() -> stub().put(PutRequest.parseFrom(message)), writesBefore);
        case 3 -> unary(() -> stub().delete(DeleteRequest.parseFrom(message)), writesBefore);
        case 4 -> unary(() -> stub().compareAndSet(CompareAndSetRequest.parseFrom(message)), writesBefore);
        case 5 -> unary(() -> stub().acquire(AcquireRequest.parseFrom(message)), writesBefore);
        case 6 -> unary(() -> stub().release(ReleaseRequest.parseFrom(message)), writesBefore);
        case 7 -> batch(BatchRequest.parseFrom(message), writesBefore);
        case 8 -> unary(() -> stub().get(GetRequest.parseFrom(message)), writesBefore);
        case 9 -> watch(WatchRequest.parseFrom(message));
        case 10 -> keepAlive(KeepAliveRequest.parseFrom(message));
        case 11 -> unary(() -> stub().status(StatusRequest.parseFrom(message)), writesBefore);
        case 12 -> unary(() -> stub().transferLeader(TransferLeaderRequest.parseFrom(message)), writesBefore);
        default -> stub().saveSnapshot(SaveSnapshotRequest.parseFrom(message)).forEachRemaining(chunk -> {});
      }
    } catch (InvalidProtocolBufferException notAMessage) {
      // gRPC's own decoding refuses these before the service is called.
    }
  }

  /** A unary call: answered, or ended with a documented status; a refused one wrote nothing. */
  private static void unary(ThrowingCall call, long writesBefore) throws InvalidProtocolBufferException {
    try {
      call.run();
    } catch (StatusRuntimeException e) {
      checkDocumented(e.getStatus().getCode(), e.getStatus().getDescription());
      if (refusedAtTheEdge(e.getStatus().getCode().value())) {
        barrier();
        assertThat(writes()).as("log writes after a refused call (%s), then the barrier", e.getStatus()).isEqualTo(writesBefore + 1);
      }
    }
  }

  /**
   * A write of this test's own, answered only once it was applied: a write the node sent to the
   * log before it (a refused call's, if the refusal leaked) is counted by then.
   */
  private static void barrier() {
    stub().put(PutRequest.newBuilder().setKey("fuzz-barrier").build());
  }

  /** A batch: each op answered or refused; ops refused at the edge never reach the log. */
  private static void batch(BatchRequest request, long writesBefore) {
    BatchResponse response;
    try {
      response = stub().batch(request);
    } catch (StatusRuntimeException e) {
      checkDocumented(e.getStatus().getCode(), e.getStatus().getDescription());
      if (refusedAtTheEdge(e.getStatus().getCode().value())) {
        barrier();
        assertThat(writes()).as("log writes after a refused batch (%s), then the barrier", e.getStatus()).isEqualTo(writesBefore + 1);
      }
      return;
    }
    assertThat(response.getResultsCount()).as("results of a batch of %d ops", request.getOpsCount()).isEqualTo(request.getOpsCount());
    long mayWrite = 0;
    for (BatchResult r : response.getResultsList()) {
      if (r.hasError()) {
        checkDocumented(Status.fromCodeValue(r.getError().getCode()).getCode(), r.getError().getMessage());
        if (!refusedAtTheEdge(r.getError().getCode())) {
          mayWrite++;
        }
      } else {
        mayWrite++;
      }
    }
    barrier();
    assertThat(writes() - writesBefore).as("log writes of a batch with %d ops not refused, then the barrier", mayWrite).isLessThanOrEqualTo(mayWrite + 1);
  }

  /** A watch: refused with a documented status, or started (then cancelled here). */
  private static void watch(WatchRequest request) throws InterruptedException {
    CompletableFuture<Status> ended = new CompletableFuture<>();
    CompletableFuture<ClientCallStreamObserver<WatchRequest>> call = new CompletableFuture<>();
    LeaseholdGrpc.newStub(core.channel())
        .watch(
            request,
            new ClientResponseObserver<WatchRequest, WatchResponse>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
                call.complete(requestStream);
              }

              @Override
              public void onNext(WatchResponse value) {}

              @Override
              public void onError(Throwable t) {
                ended.complete(Status.fromThrowable(t));
              }

              @Override
              public void onCompleted() {
                ended.complete(Status.OK);
              }
            });
    // A refusal comes at once; a started watch stays open until cancelled.
    Status status = ended.completeOnTimeout(null, 200, TimeUnit.MILLISECONDS).join();
    if (status == null) {
      call.join().cancel("the fuzz test is done with this watch", null);
      return;
    }
    if (!status.isOk()) {
      checkDocumented(status.getCode(), status.getDescription());
    }
  }

  /** A keep-alive: answered (the ids it does not know reported gone), never an error. */
  private static void keepAlive(KeepAliveRequest request) {
    CompletableFuture<Object> answer = new CompletableFuture<>();
    StreamObserver<KeepAliveRequest> out =
        LeaseholdGrpc.newStub(core.channel())
            .withDeadlineAfter(60, TimeUnit.SECONDS)
            .keepAlive(
                new StreamObserver<KeepAliveResponse>() {
                  @Override
                  public void onNext(KeepAliveResponse value) {
                    answer.complete(value);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.complete(Status.fromThrowable(t));
                  }

                  @Override
                  public void onCompleted() {
                    answer.complete(Status.OK);
                  }
                });
    out.onNext(request);
    Object got = answer.join();
    out.onCompleted();
    assertThat(got).as("keep-alive answer to %s", request).isInstanceOf(KeepAliveResponse.class);
  }

  /** {@return whether the status is a refusal before the log: a bad request, or one over a limit} */
  private static boolean refusedAtTheEdge(int code) {
    return code == Status.Code.INVALID_ARGUMENT.value() || code == Status.Code.RESOURCE_EXHAUSTED.value();
  }

  private static void checkDocumented(Status.Code code, String description) {
    assertThat(DOCUMENTED).as("status %s: %s", code, description).contains(code);
    assertThat(description).as("description of %s", code).isNotBlank();
    if (code == Status.Code.DEADLINE_EXCEEDED) {
      // Only the state's refusal of a late copy of a call, never a call that hung.
      assertThat(description).as("description of %s", code).contains("not applied");
    }
  }

  @FunctionalInterface
  private interface ThrowingCall {
    Object run() throws InvalidProtocolBufferException;
  }
}
