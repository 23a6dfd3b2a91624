package io.leasehold.server.edge;

import io.leasehold.server.Limits;
import io.leasehold.server.NodeCounters;
import io.leasehold.server.admin.LeadershipTransfer;
import io.leasehold.server.admin.MembershipChanges;
import io.leasehold.server.admin.MembershipRpcs;
import io.leasehold.server.raft.LeaderRefusals;
import io.leasehold.server.raft.NotNowException;
import io.leasehold.server.raft.RaftGateway;
import io.leasehold.server.replicated.AclTable;
import io.leasehold.server.replicated.CoreState;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclGrantResponse;
import io.leasehold.core.proto.AclListRequest;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRevokeResponse;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
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
import io.leasehold.core.proto.OpError;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.SaveSnapshotRequest;
import io.leasehold.core.proto.SnapshotChunk;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.TransferLeaderRequest;
import io.leasehold.core.proto.TransferLeaderResponse;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Counts;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotCopy;
import io.leasehold.server.state.SnapshotCopyRequest;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client protocol of one node. Checks every request at the edge (a bad one is refused with
 * {@code INVALID_ARGUMENT} naming the field and its allowed range, one over a limit with {@code
 * RESOURCE_EXHAUSTED} by {@link LimitChecks}, before anything is written), then forwards writes
 * through the log and reads through the leader.
 */
public final class ClientService extends LeaseholdGrpc.LeaseholdImplBase {

  private static final Logger log = LoggerFactory.getLogger(ClientService.class);

  static final long MIN_TTL_MILLIS = 10;
  static final long MAX_TTL_MILLIS = 24L * 60 * 60 * 1000;
  static final int MAX_LEASE_NAME_CHARS = 256;

  /** A session's owner: the API's longest owner name. */
  static final int MAX_OWNER_CHARS = 256;

  /** A tenure's holder: an owner name, {@code #} and its incarnation, with room to spare. */
  static final int MAX_HOLDER_CHARS = 320;
  static final long STATUS_COUNTS_TIMEOUT_MILLIS = 1000;
  /**
   * Session ids one watch, read or keep-alive message may name: the work one message makes (each
   * id looked up under the state's lock, or confirmed by a Raft read) is bounded however large a
   * hostile client makes it. A client has one session per distinct TTL in use, so this is far
   * above what a well-behaved one sends.
   */
  static final int MAX_SESSION_IDS = 1000;
  public static final int MAX_BATCH_OPS = 1024;

  private final RaftGateway raft;
  private final WatchHub watches;
  private final Supplier<NodeStatus> nodeStatus;
  private final LeadershipTransfer leadership;
  private final NodeCounters counters;
  private final LeaderRefusals refusals;
  private final AccessControl access;
  /** --max-sessions-per-identity, carried in each grant's entry; 0: none. */
  private final int maxSessionsPerIdentity;
  private final LimitChecks limits;
  /** The cluster identity this node has applied; empty until the first leader's entry. */
  private final Supplier<String> clusterId;

  public ClientService(
      RaftGateway raft,
      LeaderRefusals refusals,
      WatchHub watches,
      Supplier<NodeStatus> nodeStatus,
      NodeCounters counters,
      LeadershipTransfer leadership,
      AccessControl access,
      int maxSessionsPerIdentity,
      LimitChecks limits,
      Supplier<String> clusterId) {
    this.clusterId = clusterId;
    this.access = access;
    this.maxSessionsPerIdentity = maxSessionsPerIdentity;
    this.limits = limits;
    this.counters = counters;
    this.refusals = refusals;
    this.raft = raft;
    this.watches = watches;
    this.nodeStatus = nodeStatus;
    this.leadership = leadership;
  }

  @Override
  public void grant(GrantRequest request, StreamObserver<GrantResponse> out) {
    writeChecked(Command.newBuilder().setGrant(request), GrantResponse.parser(), out);
  }

  @Override
  public void revoke(RevokeRequest request, StreamObserver<RevokeResponse> out) {
    writeChecked(Command.newBuilder().setRevoke(request), RevokeResponse.parser(), out);
  }

  @Override
  public void put(PutRequest request, StreamObserver<PutResponse> out) {
    writeChecked(Command.newBuilder().setPut(request), PutResponse.parser(), out);
  }

  @Override
  public void delete(DeleteRequest request, StreamObserver<DeleteResponse> out) {
    writeChecked(Command.newBuilder().setDelete(request), DeleteResponse.parser(), out);
  }

  @Override
  public void compareAndSet(CompareAndSetRequest request, StreamObserver<CompareAndSetResponse> out) {
    writeChecked(Command.newBuilder().setCompareAndSet(request), CompareAndSetResponse.parser(), out);
  }

  @Override
  public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> out) {
    writeChecked(Command.newBuilder().setAcquire(request), AcquireResponse.parser(), out);
  }

  @Override
  public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> out) {
    writeChecked(Command.newBuilder().setRelease(request), ReleaseResponse.parser(), out);
  }

  @Override
  public void batch(BatchRequest request, StreamObserver<BatchResponse> out) {
    int count = request.getOpsCount();
    if (count == 0 || count > MAX_BATCH_OPS) {
      invalid(out, "ops must hold 1 to " + MAX_BATCH_OPS + " writes; was " + count);
      return;
    }
    BatchResult[] results = new BatchResult[count];
    AtomicInteger outstanding = new AtomicInteger(count);
    ClientIdentity identity = ClientIdentity.current();
    for (int i = 0; i < count; i++) {
      int at = i;
      Command.Builder builder = command(request.getOps(i));
      Command command = builder == null ? null : stamped(builder, identity);
      Status refusal =
          command == null
              ? Status.INVALID_ARGUMENT.withDescription("ops[" + i + "] names no write")
              : refusal(identity, command);
      CompletableFuture<BatchResult> result =
          refusal != null
              ? CompletableFuture.completedFuture(error(refusal.getCode(), refusal.getDescription()))
              : write(command).handle(ClientService::result);
      result.thenAccept(
          r -> {
            results[at] = r;
            if (outstanding.decrementAndGet() == 0) {
              out.onNext(BatchResponse.newBuilder().addAllResults(Arrays.asList(results)).build());
              out.onCompleted();
            }
          });
    }
  }

  /** {@return the log command a batch op stands for, not stamped yet; null when the op names none} */
  private static Command.Builder command(BatchOp op) {
    Command.Builder c = Command.newBuilder();
    switch (op.getKindCase()) {
      case GRANT -> c.setGrant(op.getGrant());
      case REVOKE -> c.setRevoke(op.getRevoke());
      case PUT -> c.setPut(op.getPut());
      case DELETE -> c.setDelete(op.getDelete());
      case COMPARE_AND_SET -> c.setCompareAndSet(op.getCompareAndSet());
      case ACQUIRE -> c.setAcquire(op.getAcquire());
      case RELEASE -> c.setRelease(op.getRelease());
      default -> {
        return null;
      }
    }
    return c;
  }

  /** What a batch op's write answers: the response bytes, or the status its unary call ends with. */
  private static BatchResult result(Reply reply, Throwable error) {
    if (error != null) {
      StatusRuntimeException e = unavailable("the write was not confirmed by the cluster", error);
      return error(Status.Code.UNAVAILABLE, e.getStatus().getDescription());
    }
    if (reply.hasFailure()) {
      Failure f = reply.getFailure();
      return error(failureStatus(f).getCode(), f.getMessage());
    }
    return BatchResult.newBuilder().setResponse(reply.getOk()).build();
  }

  private static BatchResult error(Status.Code code, String message) {
    return BatchResult.newBuilder()
        .setError(OpError.newBuilder().setCode(code.value()).setMessage(message == null ? "" : message))
        .build();
  }

  /**
   * {@return why a write must be refused before it reaches the log (the field and its allowed
   * range), or null when it may go}
   */
  public static String problem(Command command) {
    switch (command.getKindCase()) {
      case GRANT: {
        long ttl = command.getGrant().getTtlMillis();
        return firstOf(
            ttl < MIN_TTL_MILLIS || ttl > MAX_TTL_MILLIS
                ? "ttl_millis must be between " + MIN_TTL_MILLIS + " and " + MAX_TTL_MILLIS + "; was " + ttl
                : null,
            lengthProblem("owner", command.getGrant().getOwner(), MAX_OWNER_CHARS));
      }
      case PUT:
        if (command.getPut().hasTenure()) {
          io.leasehold.core.proto.PutRequest p = command.getPut();
          return firstOf(
              attachedKeyProblem(p.getKey()),
              leaseNameProblem(p.getTenure().getName()),
              holderProblem("tenure.holder", p.getTenure().getHolder()),
              positiveProblem("tenure.token", p.getTenure().getToken()),
              p.getSessionId() == 0 ? null : "session_id must be 0 when a tenure is given; was " + p.getSessionId());
        }
        return writableKeyProblem(command.getPut().getKey());
      case DELETE:
        // Deleting a named lease's key is allowed: it is how an operator revokes a lease.
        return keyProblem(command.getDelete().getKey());
      case COMPARE_AND_SET:
        return writableKeyProblem(command.getCompareAndSet().getKey());
      case ACQUIRE: {
        AcquireRequest a = command.getAcquire();
        return firstOf(
            leaseNameProblem(a.getName()),
            holderProblem("holder", a.getHolder()),
            positiveProblem("session_id", a.getSessionId()));
      }
      case RELEASE: {
        ReleaseRequest r = command.getRelease();
        return firstOf(
            leaseNameProblem(r.getName()), holderProblem("holder", r.getHolder()), positiveProblem("token", r.getToken()));
      }
      default:
        return null;
    }
  }

  @Override
  public void get(GetRequest request, StreamObserver<GetResponse> out) {
    if (tooManySessionIds(request.getSessionIdsCount(), out)) {
      return;
    }
    String problem = request.getPrefix() ? pageProblem(request) : singleKeyProblem(request);
    if (problem != null) {
      invalid(out, problem);
      return;
    }
    if (refused(access.get(ClientIdentity.current(), request), out) || limits.refused(request, out)) {
      return;
    }
    StreamObserver<GetResponse> answer = out;
    if (request.getPrefix() && request.getLimit() == 0) {
      // An unpaged read (a client from before paged reads): all of it in one answer, or nothing.
      answer =
          new StreamObserver<>() {
            private boolean refused;

            @Override
            public void onNext(GetResponse response) {
              if (!response.getMore()) {
                out.onNext(response);
                return;
              }
              refused = true;
              out.onError(
                  Status.RESOURCE_EXHAUSTED
                      .withDescription(
                          "the keys under \"" + request.getKey() + "\" are more than one answer may hold ("
                              + Limits.MAX_UNPAGED_BYTES + " bytes): read them in pages (GetRequest.limit 1 to "
                              + Limits.MAX_PAGE_KEYS + ", start_after); nothing was read")
                      .asRuntimeException());
            }

            @Override
            public void onError(Throwable t) {
              out.onError(t);
            }

            @Override
            public void onCompleted() {
              if (!refused) {
                out.onCompleted();
              }
            }
          };
    }
    read(Query.newBuilder().setGet(request).build(), GetResponse.parser(), answer);
  }

  /** Ends {@code out} with INVALID_ARGUMENT when a message names more than {@link #MAX_SESSION_IDS}. */
  private static boolean tooManySessionIds(int count, StreamObserver<?> out) {
    if (count <= MAX_SESSION_IDS) {
      return false;
    }
    invalid(out, "session_ids may name at most " + MAX_SESSION_IDS + " sessions; was " + count);
    return true;
  }

  /** {@return what is wrong with a read of one key, or null} */
  private static String singleKeyProblem(GetRequest request) {
    if (request.getLimit() != 0 || !request.getStartAfter().isEmpty()) {
      return "limit and start_after are for prefix reads (prefix true) only; was limit " + request.getLimit()
          + ", start_after of " + request.getStartAfter().length() + " characters";
    }
    return keyProblem(request.getKey());
  }

  /** {@return what is wrong with a prefix read's page fields, or null} */
  private static String pageProblem(GetRequest request) {
    int afterBytes = request.getStartAfterBytes().size();
    return afterBytes > Limits.MOST_KEY_BYTES
        ? "start_after must be at most " + Limits.MOST_KEY_BYTES + " bytes (a key); was " + afterBytes
        : null;
  }

  @Override
  public void watch(WatchRequest request, StreamObserver<WatchResponse> out) {
    if (tooManySessionIds(request.getSessionIdsCount(), out)) {
      return;
    }
    if (!request.getPrefix() && request.getKey().isEmpty()) {
      invalid(out, "key must not be empty (give a key, or a prefix with prefix set)");
      return;
    }
    if (limits.refused(request, out) || refused(access.watch(ClientIdentity.current(), request), out)) {
      return;
    }
    ServerCallStreamObserver<WatchResponse> stream = (ServerCallStreamObserver<WatchResponse>) out;
    // Told the oldest revision it may ask for, the stream is completed by the hub.
    watches.watch(
        request.getKey(),
        request.getPrefix(),
        java.util.Set.copyOf(request.getSessionIdsList()),
        request.getLossesOnly(),
        request.getStartRevision(),
        new WatchStream(stream, limits.limits().maxWatchBacklog(), Limits.WATCH_BACKLOG_BYTES));
  }

  @Override
  public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
    // Whose sessions these may be: the leader extends only the caller's own.
    String identity = ClientIdentity.current().stored();
    return new StreamObserver<>() {
      @Override
      public void onNext(KeepAliveRequest request) {
        counters.keepAlives.increment();
        if (request.getSessionIdsCount() > MAX_SESSION_IDS) {
          synchronized (out) { // answers are written under it too
            tooManySessionIds(request.getSessionIdsCount(), out);
          }
          return; // the stream is ended: nothing confirmed, nothing extended
        }
        raft.read(Query.newBuilder().setKeepAlive(request).setIdentity(identity).build())
            .whenComplete(
                (bytes, error) -> {
                  synchronized (out) {
                    if (error != null) {
                      // The client reconnects, perhaps elsewhere; this stream is done.
                      out.onError(unavailable("keep-alive not confirmed by a leader", error));
                      return;
                    }
                    try {
                      KeepAliveResponse response = KeepAliveResponse.parseFrom(bytes);
                      if (response.getDeniedCount() > 0) {
                        out.onError(
                            Status.PERMISSION_DENIED
                                .withDescription(
                                    "identity \"" + ClientIdentity.ofStored(identity) + "\" may not keep alive session "
                                        + response.getDenied(0) + ": it belongs to another client identity (not extended)")
                                .asException());
                        return;
                      }
                      out.onNext(response);
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

  /** Bytes of the copy per streamed chunk: well under gRPC's default 4 MiB message limit. */
  static final int SNAPSHOT_CHUNK_BYTES = 1 << 20;

  @Override
  public void saveSnapshot(SaveSnapshotRequest request, StreamObserver<SnapshotChunk> out) {
    if (refused(access.admin(ClientIdentity.current(), "save a snapshot"), out)) {
      return;
    }
    raft.read(Query.newBuilder().setSnapshot(SnapshotCopyRequest.getDefaultInstance()).build())
        .whenComplete(
            (bytes, error) -> {
              if (error != null) {
                out.onError(unavailable("the copy was not confirmed by a leader", error));
                return;
              }
              SnapshotCopy copy;
              try {
                copy = SnapshotCopy.parseFrom(bytes);
              } catch (InvalidProtocolBufferException e) {
                out.onError(Status.INTERNAL.withDescription("malformed copy").withCause(e).asException());
                return;
              }
              com.google.protobuf.ByteString data = copy.getData();
              byte[] sha256;
              try {
                sha256 = java.security.MessageDigest.getInstance("SHA-256").digest(data.toByteArray());
              } catch (java.security.NoSuchAlgorithmException e) {
                out.onError(Status.INTERNAL.withCause(e).asException());
                return;
              }
              int size = data.size();
              for (int from = 0; from < size || from == 0; from += SNAPSHOT_CHUNK_BYTES) {
                SnapshotChunk.Builder chunk =
                    SnapshotChunk.newBuilder().setData(data.substring(from, Math.min(size, from + SNAPSHOT_CHUNK_BYTES)));
                if (from == 0) {
                  chunk.setRevision(copy.getRevision()).setTotalBytes(size).setSha256(com.google.protobuf.ByteString.copyFrom(sha256));
                }
                out.onNext(chunk.build());
              }
              out.onCompleted();
            });
  }

  @Override
  public void transferLeader(TransferLeaderRequest request, StreamObserver<TransferLeaderResponse> out) {
    if (refused(access.admin(ClientIdentity.current(), "move the leadership"), out)) {
      return;
    }
    if (request.getTimeoutMs() > LeadershipTransfer.MAX_TIMEOUT.toMillis()) {
      out.onError(
          Status.INVALID_ARGUMENT
              .withDescription(
                  "timeout_ms must be 0 (the default, " + LeadershipTransfer.DEFAULT_TIMEOUT.toMillis() + ") to "
                      + LeadershipTransfer.MAX_TIMEOUT.toMillis() + "; was " + request.getTimeoutMs())
              .asException());
      return;
    }
    // The lower bound (the longest election timeout) is the node's own: LeadershipTransfer says it.
    Duration timeout =
        request.getTimeoutMs() == 0 ? LeadershipTransfer.DEFAULT_TIMEOUT : Duration.ofMillis(request.getTimeoutMs());
    Optional<String> to = request.getTo().isEmpty() ? Optional.empty() : Optional.of(request.getTo());
    leadership
        .move(to, timeout)
        .whenComplete(
            (moved, error) -> {
              if (error == null) {
                out.onNext(
                    TransferLeaderResponse.newBuilder()
                        .setPreviousLeader(moved.previousLeader())
                        .setLeader(moved.leader())
                        .build());
                out.onCompleted();
                return;
              }
              out.onError(changeFailed(error));
            });
  }

  @Override
  public void status(StatusRequest request, StreamObserver<StatusResponse> out) {
    // A node's own status (nodes ask each other for their settings) needs no right; the cluster's
    // counts do.
    if (!request.getNodeOnly() && refused(access.admin(ClientIdentity.current(), "read the cluster's status"), out)) {
      return;
    }
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

  @Override
  public void aclGrant(AclGrantRequest request, StreamObserver<AclGrantResponse> out) {
    AclEntry entry = aclEntry(request.getEntry(), out);
    if (entry != null) {
      writeChecked(Command.newBuilder().setAclGrant(request.toBuilder().setEntry(entry)), AclGrantResponse.parser(), out);
    }
  }

  @Override
  public void aclRevoke(AclRevokeRequest request, StreamObserver<AclRevokeResponse> out) {
    AclEntry entry = aclEntry(request.getEntry(), out);
    if (entry != null) {
      writeChecked(Command.newBuilder().setAclRevoke(request.toBuilder().setEntry(entry)), AclRevokeResponse.parser(), out);
    }
  }

  @Override
  public void aclList(AclListRequest request, StreamObserver<AclListResponse> out) {
    if (refused(access.admin(ClientIdentity.current(), "list the ACL"), out)) {
      return;
    }
    read(Query.newBuilder().setAclList(request).build(), AclListResponse.parser(), out);
  }

  /**
   * {@return the entry with its identity in stored form, or null after refusing it: malformed
   * (INVALID_ARGUMENT, naming the field), or access control off (FAILED_PRECONDITION)}
   */
  private AclEntry aclEntry(AclEntry entry, StreamObserver<?> out) {
    if (!access.enabled()) {
      out.onError(
          Status.FAILED_PRECONDITION
              .withDescription(AclTable.ACCESS_CONTROL_OFF)
              .asException());
      return null;
    }
    ClientIdentity identity;
    try {
      identity = ClientIdentity.parse(entry.getIdentity());
    } catch (IllegalArgumentException e) {
      invalid(out, e.getMessage());
      return null;
    }
    AclEntry stored = entry.toBuilder().setIdentity(identity.stored()).build();
    String problem = AclTable.entryProblem(stored);
    if (problem != null) {
      invalid(out, problem);
      return null;
    }
    return stored;
  }

  // ---- plumbing ----

  /**
   * Refuses a write that fails its checks or its ACL check; otherwise sends it through the log,
   * stamped with the caller's identity (and, for a grant, this node's sessions-per-identity limit).
   */
  private <T extends MessageLite> void writeChecked(Command.Builder builder, Parser<T> parser, StreamObserver<T> out) {
    ClientIdentity identity = ClientIdentity.current();
    Command command = stamped(builder, identity);
    if (refused(refusal(identity, command), out)) {
      return;
    }
    write(command, parser, out);
  }

  /** {@return the command as the log gets it: the caller's identity, and for a grant this node's limit} */
  private Command stamped(Command.Builder builder, ClientIdentity identity) {
    builder.setIdentity(identity.stored());
    if (builder.hasGrant()) {
      builder.setMaxSessionsPerIdentity(maxSessionsPerIdentity);
    }
    return builder.build();
  }

  /**
   * {@return why a write may not go, checked in this order: bad input ({@code INVALID_ARGUMENT}),
   * no right ({@code PERMISSION_DENIED}), over a limit ({@code RESOURCE_EXHAUSTED}); null when it
   * may} One place for single writes and batch ops alike.
   */
  private Status refusal(ClientIdentity identity, Command command) {
    String problem = problem(command);
    if (problem != null) {
      return Status.INVALID_ARGUMENT.withDescription(problem);
    }
    Status denied = access.write(identity, command);
    if (denied != null) {
      return denied;
    }
    String over = limits.overLimit(command);
    if (over != null) {
      return Status.RESOURCE_EXHAUSTED.withDescription(over);
    }
    return command.hasGrant() ? beforeIdentity(clusterId.get()) : null;
  }

  /**
   * {@return UNAVAILABLE while this node knows no cluster identity, else null} A session's grant
   * tells its client the identity of the cluster it belongs to: how the client later tells a
   * cluster restored from a backup, at the same addresses, from this one. Once this node has
   * applied the identity, every later entry is applied after it, on every replica, so the grant's
   * answer carries it. The identity comes with the first leader's first entry: this is a moment
   * after a new cluster's (or a restored one's) first election, which clients retry through.
   */
  static Status beforeIdentity(String clusterId) {
    return clusterId.isEmpty()
        ? Status.UNAVAILABLE.withDescription(
            "this node has no cluster identity yet (the first leader is writing it); no session is granted"
                + " before it: retry in a moment")
        : null;
  }

  /** {@return whether {@code denied} refused the call (and ended it)} */
  private static boolean refused(Status denied, StreamObserver<?> out) {
    if (denied == null) {
      return false;
    }
    out.onError(denied.asException());
    return true;
  }

  private static Status failureStatus(Failure f) {
    return switch (f.getCode()) {
      case SESSION_NOT_FOUND -> Status.NOT_FOUND;
      case PERMISSION_DENIED -> Status.PERMISSION_DENIED;
      case RESOURCE_EXHAUSTED -> Status.RESOURCE_EXHAUSTED;
      // Not applied now, outcome of earlier copies unknown: the client may retry.
      case TOO_LATE -> Status.DEADLINE_EXCEEDED;
      default -> Status.FAILED_PRECONDITION;
    };
  }

  /**
   * Sends {@code command} through the log, unless it is an acquire that the leader can refuse
   * from its own state ({@link LeaderRefusals}): the log would refuse it too. Never a client's
   * retry ({@link RetryMark}): an earlier attempt may still reach the log, and only the log keeps
   * the answer that it must get. A release is noted there while it is on its way, so that
   * contenders' acquires follow it into the log.
   */
  private CompletableFuture<Reply> write(Command command) {
    if (command.hasAcquire() && !RetryMark.isRetry()) {
      Reply refused = refusals.refusal(command.getAcquire());
      if (refused != null) {
        return CompletableFuture.completedFuture(refused);
      }
    }
    long received = System.nanoTime();
    Runnable freed = refusals.freeing(command);
    CompletableFuture<Reply> sent;
    try {
      sent = raft.write(command);
    } catch (RuntimeException e) {
      freed.run();
      throw e;
    }
    // Counted here, where a write reaches the log, for unary and Batch calls alike.
    return sent
        .whenComplete(
            (r, error) -> {
              freed.run();
              counters.writes.increment();
              counters.writeNanos.add(System.nanoTime() - received);
            });
  }

  private <T extends MessageLite> void write(Command command, Parser<T> parser, StreamObserver<T> out) {
    CompletableFuture<Reply> reply = write(command);
    reply.whenComplete(
        (r, error) -> {
          if (error != null) {
            out.onError(unavailable("the write was not confirmed by the cluster", error));
            return;
          }
          if (r.hasFailure()) {
            Failure f = r.getFailure();
            out.onError(failureStatus(f).withDescription(f.getMessage()).asException());
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

  /** Its length is a limit ({@link LimitChecks}). */
  private static String keyProblem(String key) {
    return key.isEmpty() ? "key must not be empty" : null;
  }

  private static String writableKeyProblem(String key) {
    String problem = keyProblem(key);
    if (problem == null && key.startsWith(CoreState.RESERVED_PREFIX)) {
      return "key must not start with the reserved prefix " + CoreState.RESERVED_PREFIX
          + " (named leases live there; use Acquire and Release); was \"" + key + "\"";
    }
    return problem;
  }

  /** A key attached to a tenure: 1 to 128 of A-Z a-z 0-9 . _ - (no slash: the lease name ends at the last one). */
  private static String attachedKeyProblem(String key) {
    boolean ok = !key.isEmpty() && key.length() <= 128;
    for (int i = 0; ok && i < key.length(); i++) {
      char c = key.charAt(i);
      ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    }
    return ok ? null : "an attached key must be 1 to 128 of A-Z a-z 0-9 . _ -; was \"" + key + "\"";
  }

  private static String leaseNameProblem(String name) {
    return name.isEmpty() || name.length() > MAX_LEASE_NAME_CHARS
        ? "name must be 1 to " + MAX_LEASE_NAME_CHARS + " characters; was " + name.length()
        : null;
  }

  private static String nonEmptyProblem(String field, String value) {
    return value.isEmpty() ? field + " must not be empty" : null;
  }

  /**
   * Owners and holders are kept for as long as their session or tenure, replicated, written into
   * every snapshot and shown by the status page: bounded, as the API bounds an owner name.
   */
  private static String lengthProblem(String field, String value, int max) {
    return value.length() > max ? field + " must be at most " + max + " characters; was " + value.length() : null;
  }

  private static String holderProblem(String field, String holder) {
    return firstOf(nonEmptyProblem(field, holder), lengthProblem(field, holder, MAX_HOLDER_CHARS));
  }

  private static String positiveProblem(String field, long value) {
    return value <= 0 ? field + " must be a positive number; was " + value : null;
  }

  private static String firstOf(String... problems) {
    for (String p : problems) {
      if (p != null) {
        return p;
      }
    }
    return null;
  }

  private static void invalid(StreamObserver<?> out, String message) {
    out.onError(Status.INVALID_ARGUMENT.withDescription(message).asException());
  }

  /**
   * {@return how an operator's change (a leadership move, a membership change) that failed is
   * answered}: a bad request {@code INVALID_ARGUMENT}, one the cluster cannot make now ({@link
   * NotNowException}) {@code FAILED_PRECONDITION}, anything else {@code ABORTED}; the message is
   * the failure's own.
   */
  public static io.grpc.StatusException changeFailed(Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    Status status =
        cause instanceof IllegalArgumentException
            ? Status.INVALID_ARGUMENT
            : cause instanceof NotNowException ? Status.FAILED_PRECONDITION : Status.ABORTED;
    return status.withDescription(cause.getMessage()).withCause(cause).asException();
  }

  // ---- membership changes (MembershipRpcs does the work) ----

  private volatile MembershipRpcs membership;

  /** Serves the membership RPCs through {@code changes}; until called they are unimplemented. */
  public void serveMembership(MembershipChanges changes) {
    this.membership = new MembershipRpcs(changes);
  }

  @Override
  public void addNode(io.leasehold.core.proto.AddNodeRequest request, StreamObserver<io.leasehold.core.proto.MembersResponse> out) {
    if (refused(access.admin(ClientIdentity.current(), "add a node"), out)) {
      return;
    }
    if (membership == null) {
      super.addNode(request, out);
    } else {
      membership.addNode(request, out);
    }
  }

  @Override
  public void removeNode(
      io.leasehold.core.proto.RemoveNodeRequest request, StreamObserver<io.leasehold.core.proto.MembersResponse> out) {
    if (refused(access.admin(ClientIdentity.current(), "remove a node"), out)) {
      return;
    }
    if (membership == null) {
      super.removeNode(request, out);
    } else {
      membership.removeNode(request, out);
    }
  }

  @Override
  public void members(io.leasehold.core.proto.MembersRequest request, StreamObserver<io.leasehold.core.proto.MembersResponse> out) {
    if (membership == null) {
      super.members(request, out);
    } else {
      membership.members(request, out);
    }
  }
}
