package io.leasehold.server.replicated;

import io.leasehold.server.NodeSnapshot;
import io.leasehold.server.edge.ClientIdentity;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.CompareAndSetResponse;
import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.Tenure;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.RevokedTenure;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Counts;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Heard;
import io.leasehold.server.state.Quiet;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotBody;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.PriorityQueue;
import java.util.TreeMap;

/**
 * The replicated state of the core: sessions, keys and the global revision, changed only by
 * {@link #apply}. Deterministic: the same commands in the same order give the same state, the same
 * replies and the same events on every replica (ordered maps and sets only, no clock, no
 * randomness). Thread-safe: commands apply one at a time while reads run concurrently.
 *
 * <p><b>Time.</b> Every entry carries a stamp of cluster time, set by the leader that appended it
 * (see {@link io.leasehold.server.raft.ClusterClock}); the state's clock is the greatest stamp applied. So every replica
 * reads the same time at the same entry, and that time never runs ahead of real time.
 *
 * <p><b>Retried writes are applied once</b>, for as long as a copy can still arrive: {@link
 * CallDedup} remembers the calls of each client.
 *
 * <p><b>Quiet sessions.</b> A new leader cannot know when its predecessor last confirmed each
 * session, so it gives every session a full TTL, and marks them all quiet since its start (a
 * {@code Quiet} entry). A quiet session's next keep-alive first writes a {@code Heard} entry. A
 * later leader counts a session's TTL from when it became quiet, in cluster time, so repeated
 * elections no longer keep a dead holder's session alive forever.
 * <p><b>Revocation.</b> An operator's {@code Delete} of a held lease's key does not free the name:
 * the key goes (watchers see the delete), but a tombstone of the tenure stays attached to the
 * holder's session and blocks the name for everyone else until the holder releases exactly that
 * tenure (it learned of the revocation, from its watch or from its keep-alive replies, which list
 * the tombstones of the sessions they name, and stopped) or the session ends — by expiry one TTL
 * after the last keep-alive, exactly the holder's safe window. An operator's {@code Revoke} of a
 * session likewise frees nothing at once: the session is no longer kept alive and expires. There is
 * no clock here: every "until" is a log entry (a release, an expiry).
 */
public final class CoreState {

  /** Keys of named leases live under this prefix; clients may read and delete them, not write. */
  public static final String LEASE_PREFIX = "/_leasehold/leases/";

  /** Keys clients may not write to directly. */
  public static final String RESERVED_PREFIX = "/_leasehold/";


  /**
   * Keys attached to a named lease's tenure: {@code /_leasehold/attached/<lease name>/<key>}, the
   * key without a slash. They are deleted at the same revision as the lease's key.
   */
  public static final String ATTACHED_PREFIX = "/_leasehold/attached/";

  /**
   * Replies kept per client: at least as many as one client can have in flight, so that a whole
   * batch sent again after its reply was lost is answered from the replies, never refused as too
   * late. The core accepts batches of up to {@link io.leasehold.server.edge.ClientService#MAX_BATCH_OPS} writes, and the
   * project's client has at most half of this out at once (its {@code OpBatcher}), leaving room
   * for its unary calls.
   */
  public static final int REPLIES_KEPT_PER_CLIENT = 1024;

  /**
   * The longest a copy of a call may take from the node that took it from the client to the
   * leader's log. A node forwards for at most {@link io.leasehold.server.raft.RaftGateway#FORWARD_WINDOW} after receiving
   * a call; the rest is room for the network and for the nodes' estimates of cluster time.
   */
  public static final long MAX_CALL_DELAY_MILLIS = 30_000;



  /** The snapshot format this replica writes and the newest it reads ({@link Formats}). */
  private final int snapshotFormat = Formats.snapshotFormat();

  private long revision;
  /** Cluster time: the greatest stamp applied. */
  private long clockMillis;
  private final SessionTable sessions = new SessionTable();
  private final NavigableMap<String, KeyValue> keys = new TreeMap<>();
  private final CallDedup dedup = new CallDedup();
  /** Tombstones: lease key → the key as it was when an operator deleted it (see the class doc). */
  private final NavigableMap<String, KeyValue> revokedLeases = new TreeMap<>();
  private long heldLeases;
  /**
   * The data bytes this state holds ({@link #dataBytes()}), kept as every change happens. Written
   * under the lock; volatile so the edge reads it for every write without taking the lock.
   */
  private volatile long dataBytes;
  /** {@link CallDedup#bytes()} as of the last command applied: the edge reads it without the lock. */
  private volatile long callRecordBytes;
  /** How many attached keys exist: while none do, ending a tenure looks for none (no cost). */
  private long attachedKeys;
  /** Lease tenures this replica ended because their session expired, since it started (metrics). */
  private long leaseExpiries;
  /** The ACL and its changes (docs/security.md). */
  private final AclState acl = new AclState();
  /**
   * The cluster's identity: empty until a leader's Quiet proposes one (the first taken wins), and
   * again after a restore, so that a restored cluster gets one of its own. Keep-alive answers carry
   * it; a client that sees it change knows it talks to another cluster.
   */
  private String clusterId = "";
  /** A restore happened and no identity was taken since: the next one closes the names a while. */
  private boolean restored;
  /** Cluster time before which no name is granted (a restored cluster's closed period); 0: none. */
  private long grantsFromMillis;

  /** A change to apply, with what it answers and what watchers are told. */
  public record Applied(Reply reply, List<Event> events, Change change) {}

  /** What the leader's session keeper must learn from an applied command. */
  public sealed interface Change {
    /** Nothing about sessions changed. */
    record None() implements Change {}

    /** A session was granted. */
    record Granted(long sessionId, long ttlMillis) implements Change {}

    /** A session ended (revoked or expired). */
    record Ended(long sessionId) implements Change {}
  }

  private static final Change NONE = new Change.None();

  /**
   * What {@link #dataBytes()} charges for each key, tombstone and session besides its own bytes:
   * about what the heap spends on the entry's maps, message and string headers, so that many tiny
   * keys count for what they cost and not for almost nothing.
   */
  public static final int DATA_BYTES_PER_ENTRY = 256;

  /**
   * An empty state, as a node has before it applies its first entry or loads a snapshot. Public,
   * with {@link #apply(long, long, Command)} and the snapshot methods, so that the state can be
   * measured on its own (leasehold-jmh) without a node around it.
   */
  public CoreState() {}

  /**
   * Applies one log entry.
   *
   * @param index the entry's log index (also the id of a session it grants)
   * @param term the term in which the entry was appended
   * @param command the entry
   * @return the reply, the events, and the session change
   */
  public synchronized Applied apply(long index, long term, Command command) {
    return apply(index, term, command.getStampMillis(), command);
  }

  /**
   * Applies one command of a log entry whose leader's stamp is {@code stamp} (the commands packed
   * in one entry share its stamp).
   */
  public synchronized Applied apply(long index, long term, long stamp, Command command) {
    Applied applied = applyCommand(index, term, stamp, command);
    callRecordBytes = dedup.bytes(); // one volatile write per command, not one per hole and reply
    return applied;
  }

  private Applied applyCommand(long index, long term, long stamp, Command command) {
    refuseIfNewer(index, command);
    if (stamp > clockMillis) {
      clockMillis = stamp;
    }
    CallId call = CallDedup.callOf(command);
    CallDedup.Calls calls = null;
    long callId = 0;
    if (call != null && call.getCallId() != 0) {
      callId = call.getCallId();
      calls = dedup.of(call);
      if (calls.atOrBelowHighest(callId)) {
        Reply earlier = calls.reply(callId);
        if (earlier != null) {
          return new Applied(earlier, List.of(), NONE);
        }
        if (!calls.openHole(callId, clockMillis)) {
          return tooLate(
              "call " + callId + " of this client was applied already (or given up as older than "
                  + CallDedup.DEDUP_WINDOW_MILLIS / 1000 + " s) and its reply is no longer kept; not applied again");
        }
        // A hole: the first copy of a call that later calls overtook.
      }
    }
    long received = command.getReceivedMillis();
    if (received != 0 && stamp != 0 && stamp - received > MAX_CALL_DELAY_MILLIS) {
      return tooLate(
          "the call reached the log " + (stamp - received) + " ms after a node received it, later than the "
              + MAX_CALL_DELAY_MILLIS + " ms a call may take; not applied");
    }
    List<Event> events = new ArrayList<>(1);
    Applied applied = execute(index, term, command, events);
    if (calls != null) {
      calls.remember(callId, applied.reply(), clockMillis);
    }
    if (index % 4096 == 0) {
      dedup.forgetIdle(clockMillis);
    }
    return applied;
  }

  private Applied execute(long index, long term, Command command, List<Event> events) {
    switch (command.getKindCase()) {
      case GRANT:
        return grant(index, command);
      case REVOKE:
        return revoke(command.getRevoke(), command.getIdentity(), events);
      case EXPIRE:
        if (command.getExpire().getTerm() != term) {
          // Decided by a leader that has since been deposed; its successor re-armed the session.
          return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
        }
        return endSession(command.getExpire().getSessionId(), DeleteCauses.SESSION_EXPIRED, events);
      case PUT:
        return put(command.getPut(), command.getIdentity(), events);
      case DELETE:
        return delete(command.getDelete(), events);
      case COMPARE_AND_SET:
        return compareAndSet(command.getCompareAndSet(), command.getIdentity(), events);
      case ACQUIRE:
        return acquire(command.getAcquire(), command.getIdentity(), events);
      case RELEASE:
        return release(command.getRelease(), command.getIdentity(), events);
      case ACL_INIT:
        return answer(acl.init(command.getAclInit().getRootIdentity()));
      case ACL_GRANT:
        return answer(acl.grant(command.getAclGrant(), command.getIdentity()));
      case ACL_REVOKE:
        return answer(acl.revoke(command.getAclRevoke(), command.getIdentity()));
      case QUIET:
        return quiet(term, command.getQuiet());
      case HEARD:
        return heard(command.getHeard());
      case CLOCK_TICK:
        return new Applied(ok(ByteString.EMPTY), List.of(), NONE); // its stamp moved the clock
      default:
        return failed(Failure.Code.FAILED_PRECONDITION, "unknown command " + command.getKindCase());
    }
  }

  /**
   * Thrown for a log entry holding a command this version does not know: a newer version wrote it
   * (during a rolling upgrade, a newer leader). Skipping or failing it here while newer replicas
   * apply it would make the replicas diverge, so the node stops applying instead (Ratis stops the
   * node); upgrading it lets it apply the entry and catch up.
   */
  static final class NewerCommandException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    NewerCommandException(String message) {
      super(message);
    }
  }

  /**
   * Refuses a command of a kind this version does not know (protobuf keeps it as unknown fields),
   * before anything of the entry is applied.
   *
   * @throws NewerCommandException naming the entry
   */
  public static void refuseIfNewer(long index, Command command) {
    if (command.getKindCase() == Command.KindCase.KIND_NOT_SET && !command.getUnknownFields().asMap().isEmpty()) {
      throw new NewerCommandException(
          "log entry " + index + " holds a command this version of Leasehold does not know (field "
              + command.getUnknownFields().asMap().keySet() + "): a newer version wrote it. This node stops"
              + " applying the log rather than diverge from the nodes that know it; upgrade it to the"
              + " version of the others, and it catches up");
    }
  }

  /** A new leader's mark: every session up to the given id not heard since then is quiet. */
  private Applied quiet(long term, Quiet quiet) {
    if (clusterId.isEmpty() && !quiet.getClusterId().isEmpty()) {
      // Whatever the term: the identity is not a leader-only decision, only the first one counts.
      clusterId = quiet.getClusterId();
      if (restored) {
        // The old cluster's holders may still be working on names this state has as free (taken
        // after the backup): none is granted until the longest session TTL has passed since this
        // cluster's first leader took over, by when every such holder's deadline has passed.
        grantsFromMillis = clockMillis + longestSessionTtlMillis();
        restored = false;
      }
    }
    if (quiet.getTerm() != term) {
      // Decided by a leader that has since been deposed; only the leader of a term may.
      return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
    }
    long since = quiet.getSinceMillis();
    sessions.markQuiet(quiet.getMaxSessionId(), since);
    return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
  }

  private Applied heard(Heard heard) {
    for (long id : heard.getSessionIdsList()) {
      sessions.heard(id, clockMillis);
    }
    return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
  }

  private Applied grant(long index, Command command) {
    GrantRequest grant = command.getGrant();
    String identity = command.getIdentity();
    // The limit travels in the entry (the taking node's setting), so every replica applies the
    // same one and refuses the same grants, whatever its own flag says.
    int limit = command.getMaxSessionsPerIdentity();
    int has = sessions.countOf(identity);
    if (limit > 0 && has >= limit) {
      return failed(
          Failure.Code.RESOURCE_EXHAUSTED,
          "the limit max-sessions-per-identity (" + limit + ") is reached: identity \""
              + ClientIdentity.ofStored(identity) + "\" has " + has + " sessions; close one before granting another");
    }
    long id = sessions.nextId(index);
    Session session = new Session(id, grant.getOwner(), grant.getTtlMillis(), identity);
    sessions.add(session);
    dataBytes += bytesOf(session);
    GrantResponse response =
        GrantResponse.newBuilder()
            .setSessionId(id)
            .setTtlMillis(grant.getTtlMillis())
            .setRevision(revision)
            .setClusterId(clusterId)
            .build();
    return new Applied(ok(response.toByteString()), List.of(), new Change.Granted(id, grant.getTtlMillis()));
  }

  private Applied revoke(RevokeRequest revoke, String identity, List<Event> events) {
    Session session = sessions.get(revoke.getSessionId());
    if (session != null && !session.usableBy(identity)) {
      // Another identity's session: its holder's close never; an operator's revoke with `admin`.
      if (revoke.getHolderClosing() || !acl.table().enabled() || !acl.table().allows(identity, AclRight.ACL_RIGHT_ADMIN, "")) {
        return notYours(session, identity, revoke.getHolderClosing() ? "close" : "revoke (that needs the right \"admin\")");
      }
    }
    if (!revoke.getHolderClosing()) {
      // An operator's revoke: the holder may still be working under it. The session is no longer
      // kept alive, so it ends by expiry, after its holders' safe windows; nothing is freed now.
      if (session != null) {
        session.revoked = true;
      }
      RevokeResponse response =
          RevokeResponse.newBuilder().setRevoked(session != null).setRevision(revision).build();
      return new Applied(ok(response.toByteString()), events, NONE);
    }
    Applied ended = endSession(revoke.getSessionId(), DeleteCauses.SESSION_CLOSED, events);
    RevokeResponse response =
        RevokeResponse.newBuilder().setRevoked(session != null).setRevision(revision).build();
    return new Applied(ok(response.toByteString()), ended.events(), ended.change());
  }

  /** Deletes a session and every key attached to it, all at one new revision; drops its tombstones. */
  private Applied endSession(long sessionId, String cause, List<Event> events) {
    Session session = sessions.remove(sessionId);
    if (session == null) {
      return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
    }
    dataBytes -= bytesOf(session);
    for (String key : session.revokedKeys) {
      KeyValue tombstone = revokedLeases.remove(key);
      if (tombstone != null) {
        dataBytes -= bytesOf(tombstone);
      }
    }
    if (!session.keys.isEmpty()) {
      revision++;
      boolean expired = cause.equals(DeleteCauses.SESSION_EXPIRED);
      for (String key : session.keys) {
        KeyValue gone = keys.remove(key);
        countLease(key, -1);
        dataBytes -= bytesOf(gone);
        if (expired && key.startsWith(LEASE_PREFIX)) {
          leaseExpiries++;
        }
        events.add(deleted(gone, cause));
        dropAttached(key, cause, events);
      }
    }
    return new Applied(ok(ByteString.EMPTY), events, new Change.Ended(sessionId));
  }

  private Applied put(PutRequest put, String identity, List<Event> events) {
    if (put.hasTenure()) {
      return attach(put, identity, events);
    }
    if (put.getSessionId() != 0) {
      Session s = sessions.get(put.getSessionId());
      if (s == null || s.revoked) {
        return sessionNotFound(put.getSessionId());
      }
      if (!s.usableBy(identity)) {
        return notYours(s, identity, "attach a key to");
      }
    }
    KeyValue kv = write(put.getKey(), put.getValue(), put.getSessionId(), 0, events);
    return new Applied(ok(PutResponse.newBuilder().setKv(kv).build().toByteString()), events, NONE);
  }

  /** Writes a key attached to a tenure, if the core holds exactly that tenure. */
  private Applied attach(PutRequest put, String identity, List<Event> events) {
    Tenure tenure = put.getTenure();
    KeyValue lease = keys.get(LEASE_PREFIX + tenure.getName());
    if (lease == null
        || lease.getCreateRevision() != tenure.getToken()
        || !lease.getValue().toStringUtf8().equals(tenure.getHolder())) {
      return new Applied(
          ok(PutResponse.newBuilder().setTenureEnded(true).build().toByteString()), events, NONE);
    }
    Session holder = sessions.get(lease.getSessionId());
    if (holder != null && !holder.usableBy(identity)) {
      return notYours(holder, identity, "attach a key to a tenure of");
    }
    KeyValue kv = write(ATTACHED_PREFIX + tenure.getName() + "/" + put.getKey(), put.getValue(), 0, 0, events);
    return new Applied(ok(PutResponse.newBuilder().setKv(kv).build().toByteString()), events, NONE);
  }

  /**
   * The lease key {@code leaseKey} was just deleted: deletes its tenure's attached keys at the
   * same revision. Costs nothing while no attached key exists.
   */
  private void dropAttached(String leaseKey, String cause, List<Event> events) {
    if (attachedKeys == 0 || !leaseKey.startsWith(LEASE_PREFIX)) {
      return;
    }
    String prefix = ATTACHED_PREFIX + leaseKey.substring(LEASE_PREFIX.length()) + "/";
    var range = keys.tailMap(prefix, true).entrySet().iterator();
    while (range.hasNext()) {
      var entry = range.next();
      String key = entry.getKey();
      if (!key.startsWith(prefix)) {
        break;
      }
      if (key.indexOf('/', prefix.length()) >= 0) {
        continue; // a key of a lease whose name continues with "/..."
      }
      range.remove();
      attachedKeys--;
      dataBytes -= bytesOf(entry.getValue());
      // A key written there by a plain put may name a session: it must not stay in that session's
      // keys, or the session's end would delete a key that is gone (CoreStateFuzzTest).
      detach(entry.getValue());
      events.add(deleted(entry.getValue(), cause));
    }
  }

  private Applied delete(DeleteRequest delete, List<Event> events) {
    String key = delete.getKey();
    KeyValue current = keys.get(key);
    DeleteResponse.Builder response = DeleteResponse.newBuilder();
    if (current == null) {
      return new Applied(ok(response.setRevision(revision).build().toByteString()), events, NONE);
    }
    Session holderSession = sessions.get(current.getSessionId());
    if (key.startsWith(LEASE_PREFIX) && holderSession != null) {
      // An operator revokes a held lease. Its holder may not know yet (its watch may be silent):
      // the name stays blocked by a tombstone until the holder releases this tenure or its
      // session ends. The holder's keep-alive replies list the tombstone.
      remove(key, DeleteCauses.REVOKED_BY_OPERATOR, events);
      KeyValue replaced = revokedLeases.put(key, current);
      dataBytes += bytesOf(current) - (replaced == null ? 0 : bytesOf(replaced));
      holderSession.revokedKeys.add(key);
    } else {
      remove(key, "", events);
    }
    response.setDeleted(true).setRevision(revision).setPrevKv(current);
    return new Applied(ok(response.build().toByteString()), events, NONE);
  }

  /** Removes a tombstone: its holder stopped using that tenure, or gave it up for a new one. */
  private void dropTombstone(String key, KeyValue tombstone) {
    if (revokedLeases.remove(key) != null) {
      dataBytes -= bytesOf(tombstone);
    }
    Session session = sessions.get(tombstone.getSessionId());
    if (session != null) {
      session.revokedKeys.remove(key);
    }
  }

  private boolean isLive(long sessionId) {
    Session s = sessions.get(sessionId);
    return s != null && !s.revoked;
  }

  private Applied compareAndSet(CompareAndSetRequest cas, String identity, List<Event> events) {
    if (cas.getSessionId() != 0) {
      Session s = sessions.get(cas.getSessionId());
      if (s != null && !s.usableBy(identity)) {
        return notYours(s, identity, "attach a key to");
      }
    }
    KeyValue current = keys.get(cas.getKey());
    long actual = current == null ? 0 : current.getModRevision();
    CompareAndSetResponse.Builder response = CompareAndSetResponse.newBuilder();
    if (actual != cas.getExpectedModRevision()) {
      if (current != null) {
        response.setKv(current);
      }
      return new Applied(ok(response.setRevision(revision).build().toByteString()), events, NONE);
    }
    if (cas.getSessionId() != 0 && !isLive(cas.getSessionId())) {
      return sessionNotFound(cas.getSessionId());
    }
    KeyValue kv = write(cas.getKey(), cas.getValue(), cas.getSessionId(), 0, events);
    response.setSucceeded(true).setKv(kv).setRevision(revision);
    return new Applied(ok(response.build().toByteString()), events, NONE);
  }

  /**
   * Takes a named lease: a compare-and-set on the key's absence, attached to the caller's session,
   * with the rules of the lease store SPI for the same holder's retries.
   */
  private Applied acquire(AcquireRequest acquire, String identity, List<Event> events) {
    Session session = sessions.get(acquire.getSessionId());
    if (session == null || session.revoked) {
      return sessionNotFound(acquire.getSessionId());
    }
    if (!session.usableBy(identity)) {
      return notYours(session, identity, "acquire a lease with");
    }
    String key = LEASE_PREFIX + acquire.getName();
    KeyValue current = keys.get(key);
    AcquireResponse.Builder response = AcquireResponse.newBuilder();
    KeyValue tombstone = current == null ? revokedLeases.get(key) : null;
    String refusedBy = closedSinceRestore();
    if (refusedBy == null) {
      refusedBy = refusingHolder(current, tombstone, acquire);
    }
    if (refusedBy != null) {
      response.setAcquired(false).setHolder(refusedBy);
      return new Applied(ok(response.build().toByteString()), events, NONE);
    }
    if (tombstone != null) {
      // Its holder asks anew, so it gave the revoked tenure up: a new tenure, a new token.
      dropTombstone(key, tombstone);
    }
    if (current != null) {
      String holder = current.getValue().toStringUtf8();
      boolean sameHolder = holder.equals(acquire.getHolder());
      if (sameHolder && current.getLeaseRequestId() == acquire.getRequestId()) {
        // A retry whose first reply was lost: the same tenure. If the retry comes through a newer
        // session of the holder, the key moves to it (same token), so that it lives and dies with
        // the session the holder now renews. Never to an older one: a client moves only forward,
        // to a session granted after the one it gave up (ids increase), so a copy through an
        // older session is a late copy of an attempt the holder abandoned, and its session is
        // no longer kept alive. Moving the key there would let it expire under a live holder.
        if (acquire.getSessionId() > current.getSessionId()) {
          write(key, current.getValue(), acquire.getSessionId(), acquire.getRequestId(), events);
        }
        response.setAcquired(true).setToken(current.getCreateRevision());
        return new Applied(ok(response.build().toByteString()), events, NONE);
      }
      // The same holder gave that tenure up: a new tenure replaces it, with a new token. The old
      // one's delete and the new one's put share one revision, the delete first.
      detach(current);
      keys.remove(key);
      countLease(key, -1);
      dataBytes -= bytesOf(current);
    }
    int replacedAt = events.size();
    if (current != null) {
      // The replaced tenure's keys go with it, at the revision of the new tenure's write.
      revision++;
      dropAttached(key, DeleteCauses.REPLACED, events);
      revision--;
    }
    KeyValue kv =
        write(
            key,
            ByteString.copyFromUtf8(acquire.getHolder()),
            acquire.getSessionId(),
            acquire.getRequestId(),
            events);
    if (current != null) {
      events.add(replacedAt, deleted(current, DeleteCauses.REPLACED));
    }
    response.setAcquired(true).setToken(kv.getCreateRevision());
    return new Applied(ok(response.build().toByteString()), events, NONE);
  }

  /**
   * {@return the holder for whom {@code acquire} is refused, whatever its session: another holder
   * of the name's live tenure, or of its revoked one (whose holder may still be working under it,
   * so nobody else gets the name yet); or the same holder's, when the request is older than the
   * tenure (a late copy). Null when the acquire may take the name, or is a retry of the tenure's
   * own request.}
   */
  private static String refusingHolder(KeyValue current, KeyValue tombstone, AcquireRequest acquire) {
    if (tombstone != null) {
      String holder = tombstone.getValue().toStringUtf8();
      boolean mayTake = holder.equals(acquire.getHolder()) && tombstone.getLeaseRequestId() < acquire.getRequestId();
      return mayTake ? null : holder;
    }
    if (current != null) {
      String holder = current.getValue().toStringUtf8();
      boolean refused = !holder.equals(acquire.getHolder()) || current.getLeaseRequestId() > acquire.getRequestId();
      return refused ? holder : null;
    }
    return null;
  }

  private Applied release(ReleaseRequest release, String identity, List<Event> events) {
    String key = LEASE_PREFIX + release.getName();
    KeyValue current = keys.get(key);
    boolean ours =
        current != null
            && current.getCreateRevision() == release.getToken()
            && current.getValue().toStringUtf8().equals(release.getHolder());
    if (ours) {
      Session holder = sessions.get(current.getSessionId());
      if (holder != null && !holder.usableBy(identity)) {
        return notYours(holder, identity, "release a tenure of");
      }
      remove(key, DeleteCauses.RELEASED, events);
    } else {
      KeyValue tombstone = current == null ? revokedLeases.get(key) : null;
      if (tombstone != null
          && tombstone.getCreateRevision() == release.getToken()
          && tombstone.getValue().toStringUtf8().equals(release.getHolder())) {
        Session holder = sessions.get(tombstone.getSessionId());
        if (holder != null && !holder.usableBy(identity)) {
          return notYours(holder, identity, "release a tenure of");
        }
        // The holder of a revoked tenure says it stopped: the name is free.
        dropTombstone(key, tombstone);
        ours = true;
      }
    }
    return new Applied(
        ok(ReleaseResponse.newBuilder().setReleased(ours).build().toByteString()), events, NONE);
  }

  /** Refuses a call on another identity's session: nothing changes. */
  private static Applied notYours(Session session, String identity, String what) {
    return failed(
        Failure.Code.PERMISSION_DENIED,
        "identity \"" + ClientIdentity.ofStored(identity) + "\" may not " + what + " session " + session.id
            + ": it belongs to another client identity");
  }

  /** {@return the ACL as it is applied here; read without the lock} */
  public AclTable acl() {
    return acl.table();
  }

  /** {@return the ACL for AclList (identities as users write them)} */
  public AclListResponse aclList() {
    return acl.list();
  }

  /** {@return whether the session exists and a call by {@code identity} (stored form) may use it} */
  public synchronized boolean sessionUsableBy(long sessionId, String identity) {
    Session s = sessions.get(sessionId);
    return s != null && s.usableBy(identity);
  }

  /** {@return how many sessions {@code identity} (stored form) has} */
  synchronized int sessionsOf(String identity) {
    return sessions.countOf(identity);
  }

  /** Creates or updates a key at a new revision; detaches it from a session it leaves. */
  private KeyValue write(
      String key, ByteString value, long sessionId, long leaseRequestId, List<Event> events) {
    revision++;
    KeyValue current = keys.get(key);
    KeyValue.Builder kv =
        KeyValue.newBuilder()
            .setKey(key)
            .setValue(value)
            .setModRevision(revision)
            .setSessionId(sessionId)
            .setLeaseRequestId(leaseRequestId);
    if (current == null) {
      kv.setVersion(1).setCreateRevision(revision);
      countLease(key, +1);
    } else {
      kv.setVersion(current.getVersion() + 1).setCreateRevision(current.getCreateRevision());
      if (current.getSessionId() != sessionId) {
        detach(current);
      }
    }
    KeyValue written = kv.build();
    keys.put(key, written);
    dataBytes += bytesOf(written) - (current == null ? 0 : bytesOf(current));
    if (sessionId != 0) {
      sessions.get(sessionId).keys.add(key);
    }
    events.add(Event.newBuilder().setType(Event.Type.PUT).setKv(written).build());
    return written;
  }

  private boolean remove(String key, String cause, List<Event> events) {
    KeyValue current = keys.remove(key);
    if (current == null) {
      return false;
    }
    revision++;
    detach(current);
    countLease(key, -1);
    dataBytes -= bytesOf(current);
    events.add(deleted(current, cause));
    dropAttached(key, cause, events);
    return true;
  }

  private void detach(KeyValue kv) {
    Session session = sessions.get(kv.getSessionId());
    if (session != null) {
      session.keys.remove(kv.getKey());
    }
  }

  private void countLease(String key, int delta) {
    if (key.startsWith(LEASE_PREFIX)) {
      heldLeases += delta;
    } else if (key.startsWith(ATTACHED_PREFIX)) {
      attachedKeys += delta;
    }
  }

  private Event deleted(KeyValue gone, String cause) {
    return Event.newBuilder()
        .setType(Event.Type.DELETE)
        .setKv(gone.toBuilder().setModRevision(revision))
        .setCause(cause)
        .build();
  }

  private static Reply ok(ByteString response) {
    return Replies.ok(response);
  }

  /** {@return a reply that changed nothing about sessions and told watchers nothing} */
  private static Applied answer(Reply reply) {
    return new Applied(reply, List.of(), NONE);
  }

  private static Applied failed(Failure.Code code, String message) {
    return answer(Replies.failure(code, message));
  }

  private static Applied tooLate(String message) {
    return failed(Failure.Code.TOO_LATE, message);
  }

  private static Applied sessionNotFound(long sessionId) {
    return failed(
        Failure.Code.SESSION_NOT_FOUND,
        "session " + sessionId + " does not exist (expired, revoked, or never granted)");
  }

  // ---- reads ----

  /**
   * Answers a get. A prefix read answers one page: the keys after {@code start_after} (from the
   * prefix when it is empty or before it), at most {@code limit} of them and {@link
   * io.leasehold.server.Limits#MAX_PAGE_KEYS}, and no more than {@link
   * io.leasehold.server.Limits#MAX_PAGE_BYTES} but always one key; {@code limit} 0 (unpaged) has
   * no count but {@link io.leasehold.server.Limits#MAX_UNPAGED_BYTES}. {@code more} says that keys
   * remain after the page (the edge refuses an unpaged read that has more). Only references to
   * the immutable key values are copied under the lock; the page is serialised outside it.
   */
  public synchronized GetResponse get(GetRequest get) {
    GetResponse.Builder response = GetResponse.newBuilder().setRevision(revision);
    if (get.getPrefix()) {
      String prefix = get.getKey();
      String after = get.getStartAfter();
      boolean fromPrefix = after.compareTo(prefix) < 0;
      String from = fromPrefix ? prefix : after;
      boolean paged = get.getLimit() != 0;
      int maxKeys =
          paged
              ? (int) Math.min(Integer.toUnsignedLong(get.getLimit()), io.leasehold.server.Limits.MAX_PAGE_KEYS)
              : Integer.MAX_VALUE;
      long maxBytes = paged ? io.leasehold.server.Limits.MAX_PAGE_BYTES : io.leasehold.server.Limits.MAX_UNPAGED_BYTES;
      long bytes = 0;
      int count = 0;
      String last = null;
      Iterator<KeyValue> candidates =
          get.getSessionIdsCount() == 0
              ? keys.tailMap(from, fromPrefix).values().iterator()
              : keysOfSessions(get.getSessionIdsList(), from, fromPrefix);
      while (candidates.hasNext()) {
        KeyValue kv = candidates.next();
        if (!kv.getKey().startsWith(prefix)) {
          break; // keys after the prefix's: every key still to come is after it too
        }
        // The bytes this key adds to the answer: its field's tag and length, and the key value.
        int size = com.google.protobuf.CodedOutputStream.computeMessageSize(1, kv);
        if (count == maxKeys || (count > 0 && bytes + size > maxBytes)) {
          response.setMore(true).setNextStartAfter(last);
          break;
        }
        response.addKvs(kv);
        bytes += size;
        count++;
        last = kv.getKey();
      }
    } else {
      KeyValue kv = keys.get(get.getKey());
      if (kv != null && (get.getSessionIdsCount() == 0 || get.getSessionIdsList().contains(kv.getSessionId()))) {
        response.addKvs(kv);
      }
    }
    return response.build();
  }

  /**
   * The keys attached to {@code sessionIds} from {@code from} on, in key order: the sessions' own
   * key sets merged, so a read costs what those sessions hold, not what the cluster holds.
   */
  private Iterator<KeyValue> keysOfSessions(List<Long> sessionIds, String from, boolean inclusive) {
    PriorityQueue<Map.Entry<String, Iterator<String>>> heads = new PriorityQueue<>(Map.Entry.comparingByKey());
    for (long id : new HashSet<>(sessionIds)) {
      Session session = sessions.get(id);
      if (session != null) {
        advance(heads, session.keys.tailSet(from, inclusive).iterator());
      }
    }
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return !heads.isEmpty();
      }

      @Override
      public KeyValue next() {
        Map.Entry<String, Iterator<String>> head = heads.remove();
        advance(heads, head.getValue());
        return keys.get(head.getKey());
      }
    };
  }

  private static void advance(PriorityQueue<Map.Entry<String, Iterator<String>>> heads, Iterator<String> rest) {
    if (rest.hasNext()) {
      heads.add(Map.entry(rest.next(), rest));
    }
  }

  /**
   * {@return the holder for whom the log would refuse {@code acquire} now, as {@link #apply} would
   * answer it (before the session check: a refusal from a name held by someone else is the answer
   * either way); null when only the log can decide}
   *
   * <p>While a restored cluster keeps its names closed, only the log decides: how long they stay
   * closed is measured on the applied clock, which stands still between entries, and a leader
   * answering every contender from here would write none, so the names would never open.
   */
  public synchronized String refusingHolder(AcquireRequest acquire) {
    if (closedSinceRestore() != null) {
      return null;
    }
    String key = LEASE_PREFIX + acquire.getName();
    KeyValue current = keys.get(key);
    return refusingHolder(current, current == null ? revokedLeases.get(key) : null, acquire);
  }

  /**
   * {@return the "holder" that refuses every acquire while a restored cluster keeps its names
   * closed (a holder of the cluster before the restore may still be working); null otherwise}
   */
  private String closedSinceRestore() {
    if (clockMillis >= grantsFromMillis) {
      return null;
    }
    return "(a holder from before this cluster's restore, until " + (grantsFromMillis - clockMillis) + " ms from now)";
  }

  private long longestSessionTtlMillis() {
    long longest = 0;
    for (Session s : sessions.all()) {
      longest = Math.max(longest, s.ttlMillis);
    }
    return longest;
  }

  /** {@return the cluster's identity; empty until its first leader took one} */
  public synchronized String clusterId() {
    return clusterId;
  }

  /**
   * After a restore from a backup: the backup's identity is the old cluster's, so it goes, and
   * the identity the first leader proposes also closes every name for a while (see {@link #quiet}).
   */
  public synchronized void markRestored() {
    clusterId = "";
    restored = true;
    grantsFromMillis = 0;
  }

  public synchronized boolean hasSession(long sessionId) {
    return sessions.contains(sessionId);
  }

  /**
   * {@return how many keys session {@code sessionId} has when writing {@code prefix + name} to it
   * would add one and it has at least {@code max}; -1 otherwise (under the limit, a key it has
   * already, or no such session: the log answers that)} The key is only built at the limit.
   */
  public synchronized int keysAtLimit(long sessionId, String prefix, String name, int max) {
    Session s = sessions.get(sessionId);
    if (s == null || s.keys.size() < max || s.keys.contains(prefix.isEmpty() ? name : prefix + name)) {
      return -1;
    }
    return s.keys.size();
  }

  /**
   * {@return how many keys are attached to lease {@code name}'s tenure when a new attached key
   * {@code key} would pass {@code max} of them, else -1} Rewriting an attached key adds none. Free
   * while the whole state has fewer than {@code max} attached keys; else it reads at most the
   * keys under the lease's attached prefix (those of leases whose names continue with "/..."
   * are skipped, not counted).
   */
  public synchronized int attachedAtLimit(String name, String key, int max) {
    String prefix = ATTACHED_PREFIX + name + "/";
    if (attachedKeys < max || keys.containsKey(prefix + key)) {
      return -1;
    }
    int count = 0;
    for (String k : keys.tailMap(prefix, true).keySet()) {
      if (!k.startsWith(prefix)) {
        break;
      }
      if (k.indexOf('/', prefix.length()) < 0 && ++count >= max) {
        return count;
      }
    }
    return -1;
  }

  /**
   * {@return whether the named lease {@code name} has a tenure or a tombstone: an acquire of it
   * adds no key} The key is built for the look-up: called only when the data quota is reached.
   */
  public synchronized boolean leaseNameInUse(String name) {
    String key = LEASE_PREFIX + name;
    return keys.containsKey(key) || revokedLeases.containsKey(key);
  }

  /** A session's state as a keep-alive needs it. */
  public enum SessionStatus {
    /** There is no such session (never granted, expired or revoked). */
    GONE,
    /** A leader has confirmed it since the last leader change. */
    HEARD,
    /** No leader has confirmed it since a leader marked it quiet. */
    QUIET,
    /** (A keep-alive only) it belongs to another identity: not extended, nothing said about it. */
    DENIED
  }

  /** {@return whether the session exists, and whether it is quiet} */
  public synchronized SessionStatus sessionStatus(long sessionId) {
    Session s = sessions.get(sessionId);
    return s == null ? SessionStatus.GONE : s.quietSince >= 0 ? SessionStatus.QUIET : SessionStatus.HEARD;
  }

  /** {@return the quiet sessions, each with the cluster time since which it is quiet} */
  public synchronized Map<Long, Long> quietSince() {
    return sessions.quietSince();
  }

  /** {@return whether any session is quiet} */
  public synchronized boolean hasQuietSessions() {
    return sessions.hasQuiet();
  }

  /** {@return cluster time: the greatest stamp applied} */
  public synchronized long clockMillis() {
    return clockMillis;
  }


  /**
   * For a keep-alive of one session by {@code identity} (stored form), in one visit of the state:
   * adds the session's revoked tenures to {@code response}, and says what the leader may do.
   *
   * @return {@code GONE} (none, or an operator revoked it), {@code DENIED} (another identity's),
   *     or whether it is {@code HEARD} or {@code QUIET}: then it may be extended
   */
  public synchronized SessionStatus keepAlive(long sessionId, String identity, KeepAliveResponse.Builder response) {
    Session s = sessions.get(sessionId);
    if (s == null) {
      return SessionStatus.GONE;
    }
    if (!s.usableBy(identity)) {
      return SessionStatus.DENIED;
    }
    if (!s.revokedKeys.isEmpty()) {
      for (String key : s.revokedKeys) {
        KeyValue tombstone = revokedLeases.get(key);
        response.addRevoked(
            RevokedTenure.newBuilder()
                .setSessionId(sessionId)
                .setName(key.substring(LEASE_PREFIX.length()))
                .setToken(tombstone.getCreateRevision()));
      }
    }
    return s.revoked ? SessionStatus.GONE : s.quietSince >= 0 ? SessionStatus.QUIET : SessionStatus.HEARD;
  }

  /** {@return every session's id and TTL, for the keeper to arm after a restart or snapshot} */
  public synchronized Map<Long, Long> sessionTtls() {
    return sessions.ttls();
  }

  public synchronized Counts counts() {
    return Counts.newBuilder()
        .setSessions(sessions.size())
        .setKeys(keys.size())
        .setHeldLeases(heldLeases)
        .setRevision(revision)
        .build();
  }

  public synchronized long revision() {
    return revision;
  }

  /**
   * {@return the data bytes this replica holds, as applied so far: for each key and each
   * tombstone of a revoked tenure, its key's bytes (UTF-8) and its value's (a named lease's value
   * is its holder); for each session, its owner's and client identity's bytes (UTF-8); and {@value
   * #DATA_BYTES_PER_ENTRY} for each of them} Not counted here: revisions and other numbers, what is
   * remembered of clients' calls ({@link #callRecordBytes()}, which {@code --max-data-bytes} counts
   * beside this), the ACL, the watch history
   * (bounded by {@code --watch-history-bytes}). {@code --max-data-bytes} bounds it. Kept as every
   * change happens (long arithmetic, nothing allocated) and counted anew when a snapshot is loaded;
   * read without the lock.
   */
  public long dataBytes() {
    return dataBytes;
  }

  /**
   * {@return the bytes what the state remembers of clients' calls takes ({@link CallDedup#bytes()}):
   * per client, its holes and its kept replies} Not in {@link #dataBytes()}, which is the data a
   * client wrote, but counted by {@code --max-data-bytes} with it ({@link #quotaBytes()}): a call
   * from a fresh client id is remembered for minutes whether or not it wrote anything, so calls
   * from ever new ids, refused or not, would otherwise grow the state without bound. Read without
   * the lock.
   */
  public long callRecordBytes() {
    return callRecordBytes;
  }

  /** {@return what {@code --max-data-bytes} bounds: {@link #dataBytes()} and {@link #callRecordBytes()}} */
  public long quotaBytes() {
    return dataBytes + callRecordBytes;
  }

  /** How long (cluster time) a client's calls are remembered after its last write. */
  public static final long CALLS_REMEMBERED_MILLIS = CallDedup.DEDUP_WINDOW_MILLIS;

  /**
   * {@return whether the state remembers calls of the client that sent {@code command}, or the
   * command carries no call to remember (written by the cluster, or without a call id)}
   */
  public synchronized boolean remembersCaller(Command command) {
    CallId call = CallDedup.callOf(command);
    return call == null || call.getCallId() == 0 || dedup.remembers(call);
  }

  /** {@return {@link #callRecordBytes()} counted anew} */
  synchronized long recountCallRecordBytes() {
    return dedup.recountBytes();
  }

  /** {@return the data bytes of the whole state counted anew, as {@link #dataBytes()} defines them} */
  synchronized long recountDataBytes() {
    long bytes = 0;
    for (KeyValue kv : keys.values()) {
      bytes += bytesOf(kv);
    }
    for (KeyValue tombstone : revokedLeases.values()) {
      bytes += bytesOf(tombstone);
    }
    for (Session s : sessions.all()) {
      bytes += bytesOf(s);
    }
    return bytes;
  }

  /** {@return the data bytes of one key or tombstone} */
  private static long bytesOf(KeyValue kv) {
    return DATA_BYTES_PER_ENTRY + (long) Utf8.length(kv.getKey()) + kv.getValue().size();
  }

  /** {@return the data bytes of one session} */
  private static long bytesOf(Session s) {
    return DATA_BYTES_PER_ENTRY + (long) Utf8.length(s.owner) + Utf8.length(s.identity);
  }

  /** {@return lease tenures this replica ended with their session's expiry since it started} */
  public synchronized long leaseExpiries() {
    return leaseExpiries;
  }

  /**
   * {@return the first {@code max} held named leases (in name order) with their session's TTL, for
   * the status page: at most that many copied under the lock, however many are held}
   */
  public synchronized List<NodeSnapshot.HeldLease> heldLeaseList(int max, java.util.function.LongUnaryOperator remainingMillis) {
    List<NodeSnapshot.HeldLease> held = new ArrayList<>();
    for (KeyValue kv : keys.tailMap(LEASE_PREFIX, true).values()) {
      if (!kv.getKey().startsWith(LEASE_PREFIX) || held.size() == max) {
        break;
      }
      Session s = sessions.get(kv.getSessionId());
      held.add(
          new NodeSnapshot.HeldLease(
              kv.getKey().substring(LEASE_PREFIX.length()), kv.getValue().toStringUtf8(), kv.getCreateRevision(),
              kv.getSessionId(), s == null ? 0 : s.ttlMillis, remainingMillis.applyAsLong(kv.getSessionId())));
    }
    return held;
  }

  // ---- snapshots ----

  /**
   * Writes the whole state: a header (magic, format number) and the body as one message. Only
   * the copy of the state holds the lock (keys are immutable messages, so it copies references);
   * serialising and writing do not, so reads and keep-alives are not held up by the disk.
   */
  public long writeSnapshot(OutputStream out) throws IOException {
    Frozen copy = freeze();
    copy.writeTo(out);
    return copy.revision();
  }

  /**
   * {@return a copy of the whole state as it is now, for {@link Frozen#writeTo} to write later}
   * Taken under the lock in O(keys + sessions + clients) reference copies, without serialising
   * anything: the state machine takes it on the applying thread and writes it on another, so
   * applies go on while a snapshot goes to disk.
   */
  public Frozen freeze() {
    return new Frozen(snapshotBody(), snapshotFormat);
  }

  /** A copy of the whole state, written as a snapshot without holding the state's lock. */
  public static final class Frozen {
    private final SnapshotBody body;
    private final int format;

    private Frozen(SnapshotBody body, int format) {
      this.body = body;
      this.format = format;
    }

    /** {@return the revision (the last fencing token issued) of the copy} */
    public long revision() {
      return body.getRevision();
    }

    /**
     * Writes the copy as {@link #writeSnapshot} does.
     *
     * @param out where to (not closed)
     * @throws IOException if {@code out} fails
     */
    public void writeTo(OutputStream out) throws IOException {
      SnapshotCodec.write(body, format, out);
    }
  }

  /**
   * Moves the revision (the last fencing token issued) forward by {@code by}: for a cluster
   * restored from a backup, whose original may have issued tokens after the backup was taken.
   */
  public synchronized void bumpRevision(long by) {
    if (by < 0 || Long.MAX_VALUE - revision < by) {
      throw new IllegalArgumentException("bump must be 0 to " + (Long.MAX_VALUE - revision) + "; was " + by);
    }
    revision += by;
  }

  private synchronized SnapshotBody snapshotBody() {
    SnapshotBody.Builder body =
        SnapshotBody.newBuilder().setRevision(revision).setClockMillis(clockMillis);
    AclTable table = acl.table();
    body.setAclRoot(table.root()).addAllAclEntries(table.entries());
    body.setClusterId(clusterId).setRestored(restored).setGrantsFromMillis(grantsFromMillis);
    sessions.writeTo(body);
    body.addAllKeys(keys.values());
    body.addAllRevokedLeases(revokedLeases.values());
    dedup.writeTo(body);
    return body.build();
  }

  /** Replaces the whole state with a snapshot's. */
  public synchronized void readSnapshot(InputStream in) throws IOException {
    SnapshotCodec.Read read = SnapshotCodec.read(in, snapshotFormat);
    SnapshotBody body = read.body();
    int format = read.format();
    revision = body.getRevision();
    clockMillis = body.getClockMillis();
    keys.clear();
    revokedLeases.clear();
    heldLeases = 0;
    attachedKeys = 0;
    // Older snapshots have no ACL section: access control off, as it was.
    acl.replace(AclTable.of(body.getAclRoot(), body.getAclEntriesList()));
    clusterId = body.getClusterId();
    restored = body.getRestored();
    grantsFromMillis = body.getGrantsFromMillis();
    sessions.readFrom(body.getSessionsList(), body.getLastSessionId());
    for (KeyValue kv : body.getKeysList()) {
      keys.put(kv.getKey(), kv);
      countLease(kv.getKey(), +1);
      if (kv.getSessionId() != 0) {
        sessions.get(kv.getSessionId()).keys.add(kv.getKey());
      }
    }
    for (KeyValue tombstone : body.getRevokedLeasesList()) {
      revokedLeases.put(tombstone.getKey(), tombstone);
      sessions.get(tombstone.getSessionId()).revokedKeys.add(tombstone.getKey());
    }
    dedup.readFrom(body.getClientsList(), format == SnapshotCodec.SNAPSHOT_FORMAT_1, clockMillis);
    callRecordBytes = dedup.bytes();
    // Counted anew, not taken from the snapshot: whatever wrote it, the count is this state's.
    dataBytes = recountDataBytes();
  }

}
