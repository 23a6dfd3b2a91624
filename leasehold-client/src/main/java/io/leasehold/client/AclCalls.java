package io.leasehold.client;

import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclGrantResponse;
import io.leasehold.core.proto.AclListRequest;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRevokeResponse;
import io.leasehold.core.proto.AclRight;
import java.util.concurrent.CompletableFuture;

/**
 * The core's access control calls (docs/security.md, "Identity and access control"), for
 * operators' tools: each needs the {@code admin} right, and the cluster must have been
 * bootstrapped with a root identity.
 */
public final class AclCalls {

  private AclCalls() {}

  /** {@return one entry: an identity (a certificate subject, or "anonymous"), a right and a prefix} */
  public static AclEntry entry(String identity, AclRight right, String prefix) {
    return AclEntry.newBuilder().setIdentity(identity).setRight(right).setPrefix(prefix).build();
  }

  /** Adds an entry; the answer says whether it was new. */
  public static CompletableFuture<AclGrantResponse> grant(CoreClient client, AclEntry entry) {
    AclGrantRequest request = AclGrantRequest.newBuilder().setCall(client.newCall()).setEntry(entry).build();
    return client.call((stub, out) -> stub.aclGrant(request, out));
  }

  /** Removes an entry; the answer says whether it was there. */
  public static CompletableFuture<AclRevokeResponse> revoke(CoreClient client, AclEntry entry) {
    AclRevokeRequest request = AclRevokeRequest.newBuilder().setCall(client.newCall()).setEntry(entry).build();
    return client.call((stub, out) -> stub.aclRevoke(request, out));
  }

  /** Reads the ACL through the leader. */
  public static CompletableFuture<AclListResponse> list(CoreClient client) {
    return client.call((stub, out) -> stub.aclList(AclListRequest.getDefaultInstance(), out));
  }
}
