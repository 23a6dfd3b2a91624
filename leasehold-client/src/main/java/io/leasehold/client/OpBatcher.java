package io.leasehold.client;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Sends a client's writes to the core in {@code Batch} calls: a write made while fewer than
 * {@link #MAX_CALLS_IN_FLIGHT} calls are out goes at once, alone; writes made while that many are
 * out wait and go together as soon as one comes back. No timer, so a quiet client adds no latency
 * and a busy one pays one round trip, one HTTP/2 stream and one message per batch rather than per
 * write. Each write keeps its call id (retries are applied once) and gets its own answer.
 */
final class OpBatcher {

  /** Batch calls out at once; more writes wait and go together. */
  static final int MAX_CALLS_IN_FLIGHT = 2;

  /**
   * Writes in one call at most (the core accepts up to 1024). With {@link #MAX_CALLS_IN_FLIGHT},
   * a client has at most 512 batched writes out, half the replies the core keeps per client
   * ({@code CoreState.REPLIES_KEPT_PER_CLIENT}), so a batch sent again always finds its replies.
   */
  static final int MAX_OPS_PER_CALL = 256;

  /** A write, its answer, how often it was sent, and when its caller stops waiting (0: never). */
  private record Pending(BatchOp op, CompletableFuture<ByteString> response, int tries, long deadline) {}

  private final CoreClient client;
  private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
  private int inFlight;

  /**
   * @param client the connection the calls go through (failover between nodes included); a write
   *     the cluster does not confirm is sent up to twice per node it has now (the set can grow when
   *     the client follows membership changes)
   */
  OpBatcher(CoreClient client) {
    this.client = client;
  }

  /**
   * Sends one write.
   *
   * @return the serialized response of the write's unary call, or the same exception that call
   *     would have completed with
   */
  CompletableFuture<ByteString> submit(BatchOp op) {
    CompletableFuture<ByteString> response = new CompletableFuture<>();
    enqueue(new Pending(op, response, 1, 0));
    return response;
  }

  /**
   * Sends one write whose caller stops waiting after {@code withinNanos}: its call gives up
   * then, and it is not sent again after that (a retry nobody waits for could only make a grant
   * nobody knows about).
   */
  CompletableFuture<ByteString> submit(BatchOp op, long withinNanos) {
    CompletableFuture<ByteString> response = new CompletableFuture<>();
    enqueue(new Pending(op, response, 1, Math.max(1, System.nanoTime() + withinNanos)));
    return response;
  }

  private void enqueue(Pending pending) {
    synchronized (this) {
      waiting.add(pending);
    }
    sendWhatFits();
  }

  private void sendWhatFits() {
    while (true) {
      List<Pending> call;
      synchronized (this) {
        if (inFlight >= MAX_CALLS_IN_FLIGHT || waiting.isEmpty()) {
          return;
        }
        call = new ArrayList<>(Math.min(waiting.size(), MAX_OPS_PER_CALL));
        while (!waiting.isEmpty() && call.size() < MAX_OPS_PER_CALL) {
          call.add(waiting.poll());
        }
        inFlight++;
      }
      send(call);
    }
  }

  private void send(List<Pending> call) {
    BatchRequest.Builder request = BatchRequest.newBuilder();
    call.forEach(p -> request.addOps(p.op()));
    BatchRequest built = request.build();
    // The call waits as long as the most patient write in it; one without a deadline, the usual.
    long latest = 0;
    boolean unbounded = false;
    for (Pending p : call) {
      if (p.deadline() == 0) {
        unbounded = true;
      } else if (latest == 0 || p.deadline() - latest > 0) {
        latest = p.deadline();
      }
    }
    CompletableFuture<BatchResponse> sent =
        unbounded
            ? client.call((stub, out) -> stub.batch(built, out))
            : client.call((stub, out) -> stub.batch(built, out), Duration.ofNanos(Math.max(1, latest - System.nanoTime())));
    sent.whenComplete(
            (response, error) -> {
              synchronized (this) {
                inFlight--;
              }
              deliver(call, response, error);
              sendWhatFits();
            });
  }

  private void deliver(List<Pending> call, BatchResponse response, Throwable error) {
    if (error != null) {
      Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
      call.forEach(p -> p.response().completeExceptionally(cause));
      return;
    }
    if (response.getResultsCount() != call.size()) {
      IllegalStateException e =
          new IllegalStateException("the core answered " + response.getResultsCount() + " of " + call.size() + " writes");
      call.forEach(p -> p.response().completeExceptionally(CoreClient.refused(e)));
      return;
    }
    boolean failOver = false;
    for (int i = 0; i < call.size(); i++) {
      Pending p = call.get(i);
      BatchResult result = response.getResults(i);
      if (result.hasResponse()) {
        p.response().complete(result.getResponse());
        continue;
      }
      Status status =
          Status.fromCodeValue(result.getError().getCode()).withDescription(result.getError().getMessage());
      boolean waitedFor = p.deadline() == 0 || System.nanoTime() - p.deadline() < 0;
      if (status.getCode() == Status.Code.UNAVAILABLE && p.tries() < 2 * client.endpoints().size() && waitedFor) {
        // The node could not get it confirmed (no leader, or cut off): as a unary call would,
        // try the next node, with the same call id.
        failOver = true;
        synchronized (this) {
          waiting.add(new Pending(p.op(), p.response(), p.tries() + 1, p.deadline()));
        }
      } else if (status.getCode() == Status.Code.UNAVAILABLE) {
        p.response().completeExceptionally(
            new LeaseStoreUnavailableException(
                "the core did not confirm the write after " + p.tries() + " tries: " + status.getDescription(),
                status.asRuntimeException()));
      } else if (status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
        // The core no longer knows whether it applied this call (a copy reached its log too late,
        // or its reply is no longer kept): the outcome is unknown, never "not written".
        p.response().completeExceptionally(
            new LeaseTimeoutException(
                "the core cannot tell whether it applied the write: " + status.getDescription(),
                status.asRuntimeException()));
      } else {
        p.response().completeExceptionally(CoreClient.refused(status.asRuntimeException()));
      }
    }
    if (failOver) {
      client.failOver();
    }
  }
}
