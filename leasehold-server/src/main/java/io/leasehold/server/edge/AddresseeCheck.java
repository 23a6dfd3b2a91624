package io.leasehold.server.edge;

import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.grpc.server.GrpcServices;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.InstallSnapshotRequestProto;
import org.apache.ratis.proto.RaftProtos.RaftRpcRequestProto;
import org.apache.ratis.proto.RaftProtos.ReadIndexRequestProto;
import org.apache.ratis.proto.RaftProtos.RequestVoteRequestProto;
import org.apache.ratis.proto.RaftProtos.StartLeaderElectionRequestProto;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.io.grpc.ForwardingServerCallListener;
import org.apache.ratis.thirdparty.io.grpc.Metadata;
import org.apache.ratis.thirdparty.io.grpc.ServerCall;
import org.apache.ratis.thirdparty.io.grpc.ServerCallHandler;
import org.apache.ratis.thirdparty.io.grpc.ServerInterceptor;
import org.apache.ratis.thirdparty.io.grpc.Status;
import org.apache.ratis.thirdparty.io.grpc.netty.NettyServerBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Raft port takes messages between nodes only when they are addressed to this node's id.
 *
 * <p>Ratis routes a peer's message by its group alone, not by the node it names, so a node takes
 * whatever reaches its address as its own. An address outlives the node that had it: an operator
 * replaces a node whose disk died by a new one, under a new id, on the same host and ports. A
 * leader elected while the old node's removal was still joint goes on sending the old node entries
 * for its whole term (Ratis drops a removed peer's sender only when the leader completes a change
 * itself, not one it finishes at its start), and the new node, started with {@code --join} and
 * waiting to be added, took them, started its election timer, found itself in no configuration and
 * closed its Raft server for good: it could never be added (found by the fault harness, seed
 * 1905). Worse in principle: a vote or an acknowledgement answered by the new node would count
 * for the old one. So every vote, append, snapshot, read-index and election request is checked
 * for its addressee first, and one for another node is refused ({@code FAILED_PRECONDITION}, which
 * the sender logs and retries until its configuration drops that node).
 */
public final class AddresseeCheck implements GrpcServices.Customizer, ServerInterceptor {

  private static final Logger log = LoggerFactory.getLogger(AddresseeCheck.class);

  /** One warning per sender and addressee in this long: a stale sender opens a new stream often. */
  private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final String self;
  private final ByteString selfId;
  private final Map<String, Long> lastWarned = new ConcurrentHashMap<>();

  /** @param self this node's id, the only addressee it takes */
  public AddresseeCheck(String self) {
    this.self = self;
    this.selfId = ByteString.copyFromUtf8(self);
  }

  @Override
  public NettyServerBuilder customize(NettyServerBuilder builder, EnumSet<GrpcServices.Type> types) {
    return types.contains(GrpcServices.Type.SERVER) ? builder.intercept(this) : builder;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
      /** Whether the call's first message was looked at: a Ratis stream goes to one peer only. */
      private boolean checked;
      private boolean refused;

      @Override
      public void onMessage(Q message) {
        if (refused) {
          return;
        }
        if (checked) {
          super.onMessage(message);
          return;
        }
        checked = true;
        // Decided on the first message alone: refusing a stream part-way would close the call
        // while Ratis may still answer its earlier messages from another thread.
        RaftRpcRequestProto request = peerRequest(message);
        if (request == null || request.getReplyId().isEmpty() || request.getReplyId().equals(selfId)) {
          super.onMessage(message);
          return;
        }
        refused = true;
        String to = request.getReplyId().toStringUtf8();
        String from = request.getRequestorId().toStringUtf8();
        warnOnce(from, to, call.getMethodDescriptor().getBareMethodName());
        call.close(
            Status.FAILED_PRECONDITION.withDescription(
                "a Raft message from " + from + " addressed to " + to + ", but this is node " + self
                    + ", on an address that " + to + " had before?"),
            new Metadata());
      }

      @Override
      public void onHalfClose() {
        if (!refused) {
          super.onHalfClose();
        }
      }
    };
  }

  /** {@return the addressing of a message between nodes; null for any other (client, admin)} */
  private static RaftRpcRequestProto peerRequest(Object message) {
    if (message instanceof AppendEntriesRequestProto m) {
      return m.getServerRequest();
    } else if (message instanceof RequestVoteRequestProto m) {
      return m.getServerRequest();
    } else if (message instanceof InstallSnapshotRequestProto m) {
      return m.getServerRequest();
    } else if (message instanceof ReadIndexRequestProto m) {
      return m.getServerRequest();
    } else if (message instanceof StartLeaderElectionRequestProto m) {
      return m.getServerRequest();
    }
    return null;
  }

  private void warnOnce(String from, String to, String method) {
    long now = System.nanoTime();
    if (lastWarned.size() > 64) {
      lastWarned.clear(); // the ids come from the wire: keep no more than a few
    }
    Long before = lastWarned.get(from + "->" + to);
    if (before != null && now - before < WARN_EVERY_NANOS) {
      return;
    }
    lastWarned.put(from + "->" + to, now);
    log.warn(
        "node {}: refused a Raft {} from {} addressed to {}: this node took over that node's address. A leader"
            + " that still counts {} as a member, or has not yet dropped it after its removal, sends to it here;"
            + " it stops once its configuration no longer holds {} (this is logged at most once a minute)",
        self, method, from, to, to, to);
  }
}
