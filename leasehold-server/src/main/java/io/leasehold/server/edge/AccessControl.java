package io.leasehold.server.edge;

import io.leasehold.server.replicated.AclTable;
import io.leasehold.server.replicated.CoreState;

import io.grpc.Status;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AclRights;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.server.state.Command;
import java.util.List;

/**
 * The ACL check at the edge: one call per RPC, before anything is proposed or read. Reads the
 * ACL this node has applied ({@link CoreState#acl()}, an immutable table swapped on change) without
 * a lock; with access control off it costs one volatile read and allocates nothing, and with it on
 * an allowed call allocates nothing either. Only a refusal builds its message.
 *
 * <p>Which right each call needs (docs/security.md, "Identity and access control"): acquire,
 * release and a put attached to a tenure — {@code lease} on the lease's name; get — {@code read},
 * watch — {@code watch}, put, compare-and-set and delete — {@code write} on the key; a named
 * lease's key (and its attached keys) may also be read and watched with {@code lease} on its name;
 * deleting a named lease's key (an operator's revoke), revoking another identity's session,
 * status, leadership moves, snapshots and ACL calls — {@code admin}; a grant — any right. Whose a
 * session is, is checked by the log (and keep-alives by the leader), not here.
 *
 * <p>A change applies at each node when the node applies it: a node a little behind the leader
 * may still answer by the ACL before it for as long as it lags.
 */
public final class AccessControl {

  private final CoreState state;
  /**
   * This node was bootstrapped with a root identity that its state does not hold yet: until it
   * does, it serves nobody (rather than everybody, as it would with access control off).
   */
  private final java.util.function.Supplier<String> pendingBecause;

  /**
   * @param pendingBecause while the state has no ACL: why this node must not serve yet (null when
   *     the state's "off" is the truth): it was bootstrapped with a root identity its state does not
   *     hold yet, or it joined a cluster and its state has not caught up with one whose peers have
   *     access control on (or it heard from no peer yet). Fail closed: nobody, rather than everybody.
   */
  public AccessControl(CoreState state, java.util.function.Supplier<String> pendingBecause) {
    this.state = state;
    this.pendingBecause = pendingBecause;
  }

  /** {@return null when the write may go; else the status to refuse it with} */
  Status write(ClientIdentity identity, Command command) {
    AclTable acl = state.acl();
    if (!acl.enabled()) {
      return pending(acl);
    }
    String id = identity.stored();
    switch (command.getKindCase()) {
      case GRANT:
        return acl.hasAnyRight(id)
            ? null
            : denied(identity, "has no right at all (a session needs one: any right on any prefix)");
      case REVOKE:
        return revoke(acl, identity, command.getRevoke());
      case PUT:
        if (command.getPut().hasTenure()) {
          return lease(acl, identity, command.getPut().getTenure().getName());
        }
        return key(acl, identity, AclRight.ACL_RIGHT_WRITE, command.getPut().getKey(), false);
      case DELETE: {
        String key = command.getDelete().getKey();
        // Deleting a held lease's key revokes someone's tenure: an operator's act.
        return key.startsWith(CoreState.LEASE_PREFIX)
            ? admin(acl, identity, "revoke the lease \"" + key.substring(CoreState.LEASE_PREFIX.length()) + "\"")
            : key(acl, identity, AclRight.ACL_RIGHT_WRITE, key, false);
      }
      case COMPARE_AND_SET:
        return key(acl, identity, AclRight.ACL_RIGHT_WRITE, command.getCompareAndSet().getKey(), false);
      case ACQUIRE:
        return lease(acl, identity, command.getAcquire().getName());
      case RELEASE:
        return lease(acl, identity, command.getRelease().getName());
      case ACL_GRANT:
      case ACL_REVOKE:
        return admin(acl, identity, "change the ACL");
      default:
        return denied(identity, "a client may not send " + command.getKindCase());
    }
  }

  /**
   * {@return null when the read may go; else the status to refuse it with} A read filtered to
   * sessions that are all the caller's own (a holder re-reading its lease keys after a gap in its
   * watch) needs no right: it is answered only its own keys.
   */
  Status get(ClientIdentity identity, GetRequest get) {
    AclTable acl = state.acl();
    if (!acl.enabled()) {
      return pending(acl);
    }
    if (get.getSessionIdsCount() > 0 && ownsAll(identity, get.getSessionIdsList())) {
      return null;
    }
    return key(acl, identity, AclRight.ACL_RIGHT_READ, get.getKey(), get.getPrefix());
  }

  /**
   * {@return null when the watch may start; else the status to refuse it with} A watch filtered
   * to sessions that are all the caller's own (a holder watching for the loss of its leases) needs
   * no right: it is sent only its own keys' events.
   */
  Status watch(ClientIdentity identity, WatchRequest watch) {
    AclTable acl = state.acl();
    if (!acl.enabled()) {
      return pending(acl);
    }
    if (watch.getSessionIdsCount() > 0 && ownsAll(identity, watch.getSessionIdsList())) {
      return null;
    }
    return key(acl, identity, AclRight.ACL_RIGHT_WATCH, watch.getKey(), watch.getPrefix());
  }

  /** {@return null when the caller may administer; else the status to refuse it with} */
  Status admin(ClientIdentity identity, String what) {
    AclTable acl = state.acl();
    return acl.enabled() ? admin(acl, identity, what) : pending(acl);
  }

  /** {@return whether access control is on here} */
  boolean enabled() {
    return state.acl().enabled();
  }

  private boolean ownsAll(ClientIdentity identity, List<Long> sessionIds) {
    for (long id : sessionIds) {
      // A session this node has not applied yet counts as not the caller's: the call is refused
      // and the holder's watch tries again (its safety never rests on the watch).
      if (!state.sessionUsableBy(id, identity.stored())) {
        return false;
      }
    }
    return true;
  }

  /** Called while the ACL is off: refuses only on a node bootstrapped with a root not applied yet. */
  private Status pending(AclTable acl) {
    String because = pendingBecause.get();
    if (because == null) {
      return null;
    }
    return Status.UNAVAILABLE.withDescription("access control is being set up (" + because + "); try again");
  }

  private Status revoke(AclTable acl, ClientIdentity identity, RevokeRequest revoke) {
    if (revoke.getHolderClosing() || !state.hasSession(revoke.getSessionId())
        || state.sessionUsableBy(revoke.getSessionId(), identity.stored())) {
      return null; // its own session (or none): the log checks whose it is
    }
    return admin(acl, identity, "revoke session " + revoke.getSessionId() + " of another identity");
  }

  private static Status admin(AclTable acl, ClientIdentity identity, String what) {
    return acl.allows(identity.stored(), AclRight.ACL_RIGHT_ADMIN, "")
        ? null
        : denied(identity, "has no right \"admin\" (needed to " + what + ")");
  }

  private static Status lease(AclTable acl, ClientIdentity identity, String name) {
    return acl.allows(identity.stored(), AclRight.ACL_RIGHT_LEASE, name)
        ? null
        : missing(identity, AclRight.ACL_RIGHT_LEASE, "lease name", name, false);
  }

  /**
   * A right on a key or a key prefix. The keys of named leases ({@code /_leasehold/leases/NAME})
   * and their attached keys ({@code /_leasehold/attached/NAME/KEY}) may also be used with the
   * right {@code lease} on NAME (for reads and watches; writes to them are refused elsewhere).
   */
  private static Status key(AclTable acl, ClientIdentity identity, AclRight right, String key, boolean prefix) {
    String id = identity.stored();
    if (acl.allows(id, right, key)) {
      return null;
    }
    if (right != AclRight.ACL_RIGHT_WRITE) {
      if (key.startsWith(CoreState.LEASE_PREFIX)
          && acl.allows(id, AclRight.ACL_RIGHT_LEASE, key, CoreState.LEASE_PREFIX.length(), key.length())) {
        return null;
      }
      if (key.startsWith(CoreState.ATTACHED_PREFIX)) {
        int from = CoreState.ATTACHED_PREFIX.length();
        int slash = key.lastIndexOf('/');
        int nameEnd = slash < from ? key.length() : slash;
        if (acl.allows(id, AclRight.ACL_RIGHT_LEASE, key, from, nameEnd)) {
          return null;
        }
      }
    }
    return missing(identity, right, prefix ? "prefix" : "key", key, prefix);
  }

  private static Status missing(ClientIdentity identity, AclRight right, String what, String name, boolean prefix) {
    return denied(
        identity,
        "has no right \"" + AclRights.word(right) + "\" on the " + what + " \"" + name + "\" (no ACL entry grants it on "
            + (prefix ? "this prefix or a shorter one" : "a prefix of it") + ")");
  }

  private static Status denied(ClientIdentity identity, String why) {
    return Status.PERMISSION_DENIED.withDescription("identity \"" + identity + "\" " + why);
  }
}
