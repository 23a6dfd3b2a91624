package io.leasehold.server;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.CompareAndSetResponse;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Counts;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client protocol of one node. Checks every request at the edge (a bad one is refused with
 * {@code INVALID_ARGUMENT} naming the field and its allowed range, before anything is written),
 * then forwards writes through the log and reads through the leader.
 */
final class ClientService extends LeaseholdGrpc.LeaseholdImplBase {

  private static final Logger log = LoggerFactory.getLogger(ClientService.class);

  static final long MIN_TTL_MILLIS = 10;
  static final long MAX_TTL_MILLIS = 24L * 60 * 60 * 1000;
  static final int MAX_KEY_BYTES = 4096;
  static final int MAX_VALUE_BYTES = 1024 * 1024;
  static final int MAX_LEASE_NAME_CHARS = 256;
  static final long STATUS_COUNTS_TIMEOUT_MILLIS = 1000;
  static final int MAX_WATCHED_SESSIONS = 1000;

  private final RaftGateway raft;
  private final WatchHub watches;
  private final Supplier<NodeStatus> nodeStatus;

  ClientService(RaftGateway raft, WatchHub watches, Supplier<NodeStatus> nodeStatus) {
    this.raft = raft;
    this.watches = watches;
    this.nodeStatus = nodeStatus;
  }

  @Override
  public void grant(GrantRequest request, StreamObserver<GrantResponse> out) {
    if (request.getTtlMillis() < MIN_TTL_MILLIS || request.getTtlMillis() > MAX_TTL_MILLIS) {
      invalid(out, "ttl_millis must be between " + MIN_TTL_MILLIS + " and " + MAX_TTL_MILLIS + "; was " + request.getTtlMillis());
      return;
    }
    write(Command.newBuilder().setGrant(request).build(), GrantResponse.parser(), out);
  }

  @Override
  public void revoke(RevokeRequest request, StreamObserver<RevokeResponse> out) {
    write(Command.newBuilder().setRevoke(request).build(), RevokeResponse.parser(), out);
  }

  @Override
  public void put(PutRequest request, StreamObserver<PutResponse> out) {
    if (checkWritableKey(request.getKey(), out) && checkValue(request.getValue().size(), out)) {
      write(Command.newBuilder().setPut(request).build(), PutResponse.parser(), out);
    }
  }

  @Override
  public void delete(DeleteRequest request, StreamObserver<DeleteResponse> out) {
    // Deleting a named lease's key is allowed: it is how an operator revokes a lease.
    if (checkKey(request.getKey(), out)) {
      write(Command.newBuilder().setDelete(request).build(), DeleteResponse.parser(), out);
    }
  }

  @Override
  public void compareAndSet(CompareAndSetRequest request, StreamObserver<CompareAndSetResponse> out) {
    if (checkWritableKey(request.getKey(), out) && checkValue(request.getValue().size(), out)) {
      write(Command.newBuilder().setCompareAndSet(request).build(), CompareAndSetResponse.parser(), out);
    }
  }

  @Override
  public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> out) {
    if (checkLeaseName(request.getName(), out)
        && checkNonEmpty("holder", request.getHolder(), out)
        && checkPositive("session_id", request.getSessionId(), out)) {
      write(Command.newBuilder().setAcquire(request).build(), AcquireResponse.parser(), out);
    }
  }

  @Override
  public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> out) {
    if (checkLeaseName(request.getName(), out)
        && checkNonEmpty("holder", request.getHolder(), out)
        && checkPositive("token", request.getToken(), out)) {
      write(Command.newBuilder().setRelease(request).build(), ReleaseResponse.parser(), out);
    }
  }

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> out) {
    if (!request.getPrefix() && !checkKey(request.getKey(), out)) {
      return;
    }
    read(Query.newBuilder().setGet(request).build(), GetResponse.parser(), out);
  }

  @Override
  public void watch(WatchRequest request, StreamObserver<WatchResponse> out) {
    if (request.getSessionIdsCount() > MAX_WATCHED_SESSIONS) {
      invalid(out, "session_ids may name at most " + MAX_WATCHED_SESSIONS + " sessions; was "
          + request.getSessionIdsCount());
      return;
    }
    ServerCallStreamObserver<WatchResponse> stream = (ServerCallStreamObserver<WatchResponse>) out;
    boolean started =
        watches.watch(
            request.getKey(),
            request.getPrefix(),
            java.util.Set.copyOf(request.getSessionIdsList()),
            request.getStartRevision(),
            new WatchHub.Sink() {
              @Override
              public void send(WatchResponse response) {
                try {
                  stream.onNext(response);
                } catch (RuntimeException e) {
                  // The watcher went away between the check and the send.
                  log.debug("watch stream closed while sending", e);
                }
              }

              @Override
              public boolean isClosed() {
                return stream.isCancelled();
              }
            });
    if (!started) {
      out.onCompleted(); // it was told the oldest revision it may ask for
    }
  }

  @Override
  public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
    return new StreamObserver<>() {
      @Override
      public void onNext(KeepAliveRequest request) {
        raft.read(Query.newBuilder().setKeepAlive(request).build())
            .whenComplete(
                (bytes, error) -> {
                  synchronized (out) {
                    if (error != null) {
                      // The client reconnects, perhaps elsewhere; this stream is done.
                      out.onError(unavailable("keep-alive not confirmed by a leader", error));
                      return;
                    }
                    try {
                      out.onNext(KeepAliveResponse.parseFrom(bytes));
                    } catch (InvalidProtocolBufferException e) {
                      out.onError(Status.INTERNAL.withDescription("malformed keep-alive answer").asException());
                    } catch (IllegalStateException e) {
                      log.debug("keep-alive stream already closed", e);
                    }
                  }
                });
      }

      @Override
      public void onError(Throwable t) {
        // The client went away; its sessions expire unless it comes back.
      }

      @Override
      public void onCompleted() {
        synchronized (out) {
          out.onCompleted();
        }
      }
    };
  }

  @Override
  public void status(StatusRequest request, StreamObserver<StatusResponse> out) {
    StatusResponse.Builder response = StatusResponse.newBuilder().addNodes(nodeStatus.get());
    response.setLeaderId(response.getNodes(0).getRole().equals("LEADER") ? response.getNodes(0).getId() : "");
    if (request.getNodeOnly()) {
      out.onNext(response.build());
      out.onCompleted();
      return;
    }
    // A node without a leader still answers for itself, promptly, with the counts marked unknown.
    raft.read(Query.newBuilder().setCounts(Counts.getDefaultInstance()).build())
        .completeOnTimeout(null, STATUS_COUNTS_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
        .whenComplete(
            (bytes, error) -> {
              if (error == null && bytes != null) {
                try {
                  Counts counts = Counts.parseFrom(bytes);
                  response
                      .setCountsKnown(true)
                      .setSessions(counts.getSessions())
                      .setKeys(counts.getKeys())
                      .setHeldLeases(counts.getHeldLeases())
                      .setRevision(counts.getRevision());
                } catch (InvalidProtocolBufferException e) {
                  log.warn("malformed counts from the leader", e);
                }
              }
              out.onNext(response.build());
              out.onCompleted();
            });
  }

  // ---- plumbing ----

  private <T extends MessageLite> void write(Command command, Parser<T> parser, StreamObserver<T> out) {
    CompletableFuture<Reply> reply = raft.write(command);
    reply.whenComplete(
        (r, error) -> {
          if (error != null) {
            out.onError(unavailable("the write was not confirmed by the cluster", error));
            return;
          }
          if (r.hasFailure()) {
            Failure f = r.getFailure();
            Status status =
                switch (f.getCode()) {
                  case SESSION_NOT_FOUND -> Status.NOT_FOUND;
                  // Not applied now, outcome of earlier copies unknown: the client may retry.
                  case TOO_LATE -> Status.DEADLINE_EXCEEDED;
                  default -> Status.FAILED_PRECONDITION;
                };
            out.onError(status.withDescription(f.getMessage()).asException());
            return;
          }
          try {
            out.onNext(parser.parseFrom(r.getOk()));
            out.onCompleted();
          } catch (InvalidProtocolBufferException e) {
            out.onError(Status.INTERNAL.withDescription("malformed reply").withCause(e).asException());
          }
        });
  }

  private <T extends MessageLite> void read(Query query, Parser<T> parser, StreamObserver<T> out) {
    raft.read(query)
        .whenComplete(
            (bytes, error) -> {
              if (error != null) {
                out.onError(unavailable("the read was not confirmed by a leader", error));
                return;
              }
              try {
                out.onNext(parser.parseFrom(bytes));
                out.onCompleted();
              } catch (InvalidProtocolBufferException e) {
                out.onError(Status.INTERNAL.withDescription("malformed reply").withCause(e).asException());
              }
            });
  }

  private static StatusRuntimeException unavailable(String what, Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    return Status.UNAVAILABLE
        .withDescription(what + ": " + cause.getClass().getSimpleName() + ": " + cause.getMessage())
        .withCause(cause)
        .asRuntimeException();
  }

  private static boolean checkKey(String key, StreamObserver<?> out) {
    int bytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (bytes == 0 || bytes > MAX_KEY_BYTES) {
      invalid(out, "key must be 1 to " + MAX_KEY_BYTES + " bytes of UTF-8; was " + bytes + " bytes");
      return false;
    }
    return true;
  }

  private static boolean checkWritableKey(String key, StreamObserver<?> out) {
    if (!checkKey(key, out)) {
      return false;
    }
    if (key.startsWith(CoreState.RESERVED_PREFIX)) {
      invalid(out, "key must not start with the reserved prefix " + CoreState.RESERVED_PREFIX
          + " (named leases live there; use Acquire and Release); was \"" + key + "\"");
      return false;
    }
    return true;
  }

  private static boolean checkValue(int bytes, StreamObserver<?> out) {
    if (bytes > MAX_VALUE_BYTES) {
      invalid(out, "value must be at most " + MAX_VALUE_BYTES + " bytes; was " + bytes);
      return false;
    }
    return true;
  }

  private static boolean checkLeaseName(String name, StreamObserver<?> out) {
    if (name.isEmpty() || name.length() > MAX_LEASE_NAME_CHARS) {
      invalid(out, "name must be 1 to " + MAX_LEASE_NAME_CHARS + " characters; was " + name.length());
      return false;
    }
    return true;
  }

  private static boolean checkNonEmpty(String field, String value, StreamObserver<?> out) {
    if (value.isEmpty()) {
      invalid(out, field + " must not be empty");
      return false;
    }
    return true;
  }

  private static boolean checkPositive(String field, long value, StreamObserver<?> out) {
    if (value <= 0) {
      invalid(out, field + " must be a positive number; was " + value);
      return false;
    }
    return true;
  }

  private static void invalid(StreamObserver<?> out, String message) {
    out.onError(Status.INVALID_ARGUMENT.withDescription(message).asException());
  }
}
