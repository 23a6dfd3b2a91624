package io.leasehold.server.replicated;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclGrantResponse;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRevokeResponse;
import io.leasehold.core.proto.AclRight;
import io.leasehold.server.edge.ClientIdentity;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Reply;
import java.util.List;

/**
 * The access-control part of the replicated state (docs/security.md): the current {@link AclTable}
 * and the log commands that change it — {@code AclInit} (access control on, with its root),
 * {@code AclGrant} and {@code AclRevoke}. The edge checked each change already; they are checked
 * again here, against the table as the log has it, so a lagging node's view cannot let one
 * through. Changes run under {@link CoreState}'s lock; the table is read without it.
 */
final class AclState {

  /**
   * The table, replaced as a whole on a change (under the state's lock) and read by the edge
   * ({@link io.leasehold.server.edge.AccessControl}) without it.
   */
  private volatile AclTable table = AclTable.OFF;

  /** {@return the table as it is applied here} */
  AclTable table() {
    return table;
  }

  /** Replaces the table (a snapshot's). */
  void replace(AclTable loaded) {
    table = loaded;
  }

  /** Access control on with this root: only the first such entry counts (all bootstrap nodes may send one). */
  Reply init(String root) {
    if (!table.enabled() && !root.isEmpty()) {
      table = AclTable.of(root, List.of());
    }
    return Replies.ok(ByteString.EMPTY);
  }

  Reply grant(AclGrantRequest grant, String identity) {
    Reply refused = refuseChange(identity);
    if (refused != null) {
      return refused;
    }
    AclEntry entry = grant.getEntry();
    String problem = AclTable.entryProblem(entry);
    if (problem == null) {
      problem = rootEntryProblem(entry);
    }
    if (problem != null) {
      return Replies.failure(Failure.Code.FAILED_PRECONDITION, problem);
    }
    boolean added = !table.contains(entry);
    if (added) {
      table = table.with(entry);
    }
    return Replies.ok(AclGrantResponse.newBuilder().setAdded(added).build().toByteString());
  }

  Reply revoke(AclRevokeRequest revoke, String identity) {
    Reply refused = refuseChange(identity);
    if (refused != null) {
      return refused;
    }
    AclEntry entry = revoke.getEntry();
    String problem = rootEntryProblem(entry);
    if (problem != null) {
      return Replies.failure(Failure.Code.FAILED_PRECONDITION, problem);
    }
    boolean removed = table.contains(entry);
    if (removed) {
      table = table.without(entry);
    }
    return Replies.ok(AclRevokeResponse.newBuilder().setRemoved(removed).build().toByteString());
  }

  /** {@return the ACL for AclList (identities as users write them)} */
  AclListResponse list() {
    AclTable current = table;
    AclListResponse.Builder list = AclListResponse.newBuilder().setEnabled(current.enabled());
    if (current.enabled()) {
      list.setRootIdentity(ClientIdentity.ofStored(current.root()).toString());
    }
    for (AclEntry e : current.entries()) {
      list.addEntries(e.toBuilder().setIdentity(ClientIdentity.ofStored(e.getIdentity()).toString()));
    }
    return list.build();
  }

  /** The root's rights come from no entry: none naming it may be granted or revoked. */
  private String rootEntryProblem(AclEntry entry) {
    return entry.getIdentity().equals(table.root())
        ? "the root identity \"" + ClientIdentity.ofStored(table.root()) + "\" has every right: no entry grants it"
            + " any, and it cannot be revoked"
        : null;
  }

  private Reply refuseChange(String identity) {
    if (!table.enabled()) {
      return Replies.failure(Failure.Code.FAILED_PRECONDITION, AclTable.ACCESS_CONTROL_OFF);
    }
    if (!table.allows(identity, AclRight.ACL_RIGHT_ADMIN, "")) {
      return Replies.failure(
          Failure.Code.PERMISSION_DENIED,
          "identity \"" + ClientIdentity.ofStored(identity) + "\" has no right \"admin\" (needed to change the ACL)");
    }
    return null;
  }
}
