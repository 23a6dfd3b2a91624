package io.leasehold.client;

import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclGrantResponse;
import io.leasehold.core.proto.AclListRequest;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRevokeResponse;
import io.leasehold.core.proto.AclRight;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;

/**
 * The core's access control calls (docs/security.md, "Identity and access control"), for
 * operators' tools: each needs the {@code admin} right, and the cluster must have been
 * bootstrapped with a root identity.
 */
public final class AclCalls {

  /** The rights as users write them, in order. */
  public static final List<String> RIGHTS = List.of("lease", "read", "write", "watch", "admin");

  private AclCalls() {}

  /**
   * {@return the right a user's word names}
   *
   * @throws IllegalArgumentException naming the allowed words
   */
  public static AclRight right(String word) {
    return switch (word.toLowerCase(Locale.ROOT)) {
      case "lease" -> AclRight.ACL_RIGHT_LEASE;
      case "read" -> AclRight.ACL_RIGHT_READ;
      case "write" -> AclRight.ACL_RIGHT_WRITE;
      case "watch" -> AclRight.ACL_RIGHT_WATCH;
      case "admin" -> AclRight.ACL_RIGHT_ADMIN;
      default -> throw new IllegalArgumentException(
          "right must be one of " + String.join(", ", RIGHTS) + "; was \"" + word + "\"");
    };
  }

  /** {@return the word for a right (as {@link #right} reads it)} */
  public static String word(AclRight right) {
    int i = right.getNumber() - 1;
    return i >= 0 && i < RIGHTS.size() ? RIGHTS.get(i) : right.name();
  }

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
