package io.leasehold.server.admin;

import io.leasehold.server.Peer;
import io.leasehold.server.edge.ClientService;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.leasehold.core.proto.AddNodeRequest;
import io.leasehold.core.proto.Member;
import io.leasehold.core.proto.MembersRequest;
import io.leasehold.core.proto.MembersResponse;
import io.leasehold.core.proto.RemoveNodeRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The membership RPCs of the client protocol ({@code AddNode}, {@code RemoveNode}, {@code
 * Members}): checks each request at the edge, then hands it to {@link MembershipChanges}. Kept out
 * of {@link ClientService} so that the service only delegates.
 */
public final class MembershipRpcs {

  private final MembershipChanges changes;

  public MembershipRpcs(MembershipChanges changes) {
    this.changes = changes;
  }

  public void addNode(AddNodeRequest request, StreamObserver<MembersResponse> out) {
    Duration timeout = timeout(request.getTimeoutMs(), out);
    if (timeout == null) {
      return;
    }
    Peer peer;
    try {
      // Peer checks the id and the address, and names what is wrong ("node id must be ...");
      // one node only: an address with a comma is refused, not cut at the comma.
      peer = Peer.parse(request.getId() + "=" + request.getAddress());
    } catch (IllegalArgumentException e) {
      invalid(out, e.getMessage());
      return;
    }
    if (notMember(out)) {
      return;
    }
    answer(changes.add(peer, timeout), out);
  }

  public void removeNode(RemoveNodeRequest request, StreamObserver<MembersResponse> out) {
    Duration timeout = timeout(request.getTimeoutMs(), out);
    if (timeout == null) {
      return;
    }
    if (request.getId().isEmpty()) {
      invalid(out, "id must not be empty");
      return;
    }
    if (notMember(out)) {
      return;
    }
    answer(changes.remove(request.getId(), request.getForce(), timeout), out);
  }

  public void members(MembersRequest request, StreamObserver<MembersResponse> out) {
    if (notMember(out)) {
      return;
    }
    out.onNext(response(changes.members(), changes.leaderId(), false));
    out.onCompleted();
  }

  /**
   * Only a member that knows a leader which is a member too answers: a joining node not added
   * yet, or a removed one, would name a membership that is not the cluster's, and would wait in
   * vain for one to change. UNAVAILABLE sends the client to another node (and, while there is no
   * leader anywhere, the command asks again until its timeout).
   */
  private boolean notMember(StreamObserver<?> out) {
    if (changes.knowsCommittedMembers()) {
      return false;
    }
    out.onError(
        Status.UNAVAILABLE
            .withDescription("this node is not a member of the cluster that knows its leader; ask another")
            .asException());
    return true;
  }

  private static void answer(CompletableFuture<MembershipChanges.Result> change, StreamObserver<MembersResponse> out) {
    change.whenComplete(
        (result, error) -> {
          if (error == null) {
            out.onNext(response(result.members(), result.leader(), result.changed()));
            out.onCompleted();
            return;
          }
          out.onError(ClientService.changeFailed(error));
        });
  }

  private static MembersResponse response(List<Peer> members, String leader, boolean changed) {
    MembersResponse.Builder b = MembersResponse.newBuilder().setLeaderId(leader).setChanged(changed);
    for (Peer p : members) {
      b.addMembers(Member.newBuilder().setId(p.id()).setAddress(p.clientEndpoint()));
    }
    return b.build();
  }

  private static Duration timeout(int millis, StreamObserver<?> out) {
    long ms = Integer.toUnsignedLong(millis);
    if (ms > MembershipChanges.MAX_TIMEOUT.toMillis()) {
      invalid(
          out,
          "timeout_ms must be 0 (the default, " + MembershipChanges.DEFAULT_TIMEOUT.toMillis() + ") to "
              + MembershipChanges.MAX_TIMEOUT.toMillis() + "; was " + ms);
      return null;
    }
    return ms == 0 ? MembershipChanges.DEFAULT_TIMEOUT : Duration.ofMillis(ms);
  }

  private static void invalid(StreamObserver<?> out, String message) {
    out.onError(Status.INVALID_ARGUMENT.withDescription(message).asException());
  }
}
