package io.leasehold.server;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.CompareAndSetResponse;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.server.state.ClientCalls;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Counts;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SessionRecord;
import io.leasehold.server.state.SnapshotBody;
import io.leasehold.server.state.StoredReply;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The replicated state of the core: sessions, keys and the global revision, changed only by
 * {@link #apply}. Deterministic: the same commands in the same order give the same state, the same
 * replies and the same events on every replica (ordered maps and sets only, no clock, no
 * randomness). Thread-safe: commands apply one at a time while reads run concurrently.
 *
 * <p>Retried writes are applied once: each write carries its client's id and a call id, and the
 * reply to each of a client's last {@value #REPLIES_KEPT_PER_CLIENT} calls is kept, in snapshots
 * too, for {@value #CLIENT_RETENTION_ENTRIES} log entries after that client's last write.
 */
final class CoreState {

  /** Keys of named leases live under this prefix; clients may read and delete them, not write. */
  static final String LEASE_PREFIX = "/_leasehold/leases/";

  /** Keys clients may not write to directly. */
  static final String RESERVED_PREFIX = "/_leasehold/";

  static final int REPLIES_KEPT_PER_CLIENT = 64;
  static final long CLIENT_RETENTION_ENTRIES = 1_000_000;

  /** Snapshot file header: magic bytes, then the format number. */
  private static final int SNAPSHOT_MAGIC = 0x4C48534E; // "LHSN"

  static final int SNAPSHOT_FORMAT = 1;

  private long revision;
  /** The greatest session id granted; ids are unique and increase, even within one entry. */
  private long lastSessionId;
  private final NavigableMap<Long, Session> sessions = new TreeMap<>();
  private final NavigableMap<String, KeyValue> keys = new TreeMap<>();
  private final Map<ClientKey, Calls> clients = new HashMap<>();
  private long heldLeases;

  /** A change to apply, with what it answers and what watchers are told. */
  record Applied(Reply reply, List<Event> events, Change change) {}

  /** What the leader's session keeper must learn from an applied command. */
  sealed interface Change {
    /** Nothing about sessions changed. */
    record None() implements Change {}

    /** A session was granted. */
    record Granted(long sessionId, long ttlMillis) implements Change {}

    /** A session ended (revoked or expired). */
    record Ended(long sessionId) implements Change {}
  }

  private static final Change NONE = new Change.None();

  private record ClientKey(long high, long low) {}

  private static final class Calls {
    final LinkedHashMap<Long, Reply> replies = new LinkedHashMap<>();
    long lastIndex;
  }

  private record Session(long id, String owner, long ttlMillis, TreeSet<String> keys) {}

  /**
   * Applies one log entry.
   *
   * @param index the entry's log index (also the id of a session it grants)
   * @param term the term in which the entry was appended
   * @param command the entry
   * @return the reply, the events, and the session change
   */
  synchronized Applied apply(long index, long term, Command command) {
    CallId call = callOf(command);
    Calls calls = null;
    if (call != null) {
      ClientKey client = new ClientKey(call.getClientIdHigh(), call.getClientIdLow());
      calls = clients.computeIfAbsent(client, c -> new Calls());
      calls.lastIndex = index;
      Reply earlier = calls.replies.get(call.getCallId());
      if (earlier != null) {
        return new Applied(earlier, List.of(), NONE);
      }
    }
    List<Event> events = new ArrayList<>(1);
    Applied applied = execute(index, term, command, events);
    if (calls != null) {
      calls.replies.put(call.getCallId(), applied.reply());
      if (calls.replies.size() > REPLIES_KEPT_PER_CLIENT) {
        Iterator<Long> oldest = calls.replies.keySet().iterator();
        oldest.next();
        oldest.remove();
      }
    }
    if (index % 4096 == 0) {
      forgetIdleClients(index);
    }
    return applied;
  }

  private Applied execute(long index, long term, Command command, List<Event> events) {
    switch (command.getKindCase()) {
      case GRANT:
        return grant(index, command.getGrant());
      case REVOKE:
        return revoke(command.getRevoke(), events);
      case EXPIRE:
        if (command.getExpire().getTerm() != term) {
          // Decided by a leader that has since been deposed; its successor re-armed the session.
          return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
        }
        return endSession(command.getExpire().getSessionId(), "session expired", events);
      case PUT:
        return put(command.getPut(), events);
      case DELETE:
        return delete(command.getDelete(), events);
      case COMPARE_AND_SET:
        return compareAndSet(command.getCompareAndSet(), events);
      case ACQUIRE:
        return acquire(command.getAcquire(), events);
      case RELEASE:
        return release(command.getRelease(), events);
      default:
        return failed(Failure.Code.FAILED_PRECONDITION, "unknown command " + command.getKindCase());
    }
  }

  private Applied grant(long index, GrantRequest grant) {
    // The entry's index when it grants one session (as every entry did before batches); the next
    // free number when an entry grants several. Deterministic either way.
    long id = Math.max(lastSessionId + 1, index);
    lastSessionId = id;
    sessions.put(id, new Session(id, grant.getOwner(), grant.getTtlMillis(), new TreeSet<>()));
    GrantResponse response =
        GrantResponse.newBuilder()
            .setSessionId(id)
            .setTtlMillis(grant.getTtlMillis())
            .setRevision(revision)
            .build();
    return new Applied(ok(response.toByteString()), List.of(), new Change.Granted(id, grant.getTtlMillis()));
  }

  private Applied revoke(RevokeRequest revoke, List<Event> events) {
    boolean existed = sessions.containsKey(revoke.getSessionId());
    Applied ended = endSession(revoke.getSessionId(), "session revoked", events);
    RevokeResponse response =
        RevokeResponse.newBuilder().setRevoked(existed).setRevision(revision).build();
    return new Applied(ok(response.toByteString()), ended.events(), ended.change());
  }

  /** Deletes a session and every key attached to it, all at one new revision. */
  private Applied endSession(long sessionId, String cause, List<Event> events) {
    Session session = sessions.remove(sessionId);
    if (session == null) {
      return new Applied(ok(ByteString.EMPTY), List.of(), NONE);
    }
    if (!session.keys().isEmpty()) {
      revision++;
      for (String key : session.keys()) {
        KeyValue gone = keys.remove(key);
        countLease(key, -1);
        events.add(deleted(gone, cause));
      }
    }
    return new Applied(ok(ByteString.EMPTY), events, new Change.Ended(sessionId));
  }

  private Applied put(PutRequest put, List<Event> events) {
    if (put.getSessionId() != 0 && !sessions.containsKey(put.getSessionId())) {
      return sessionNotFound(put.getSessionId());
    }
    KeyValue kv = write(put.getKey(), put.getValue(), put.getSessionId(), 0, events);
    return new Applied(ok(PutResponse.newBuilder().setKv(kv).build().toByteString()), events, NONE);
  }

  private Applied delete(DeleteRequest delete, List<Event> events) {
    boolean deleted = remove(delete.getKey(), "", events);
    DeleteResponse response =
        DeleteResponse.newBuilder().setDeleted(deleted).setRevision(revision).build();
    return new Applied(ok(response.toByteString()), events, NONE);
  }

  private Applied compareAndSet(CompareAndSetRequest cas, List<Event> events) {
    KeyValue current = keys.get(cas.getKey());
    long actual = current == null ? 0 : current.getModRevision();
    CompareAndSetResponse.Builder response = CompareAndSetResponse.newBuilder();
    if (actual != cas.getExpectedModRevision()) {
      if (current != null) {
        response.setKv(current);
      }
      return new Applied(ok(response.setRevision(revision).build().toByteString()), events, NONE);
    }
    if (cas.getSessionId() != 0 && !sessions.containsKey(cas.getSessionId())) {
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
  private Applied acquire(AcquireRequest acquire, List<Event> events) {
    if (!sessions.containsKey(acquire.getSessionId())) {
      return sessionNotFound(acquire.getSessionId());
    }
    String key = LEASE_PREFIX + acquire.getName();
    KeyValue current = keys.get(key);
    AcquireResponse.Builder response = AcquireResponse.newBuilder();
    if (current != null) {
      String holder = current.getValue().toStringUtf8();
      boolean sameHolder = holder.equals(acquire.getHolder());
      if (sameHolder && current.getLeaseRequestId() == acquire.getRequestId()) {
        // A retry whose first reply was lost: the same tenure. If the retry comes through another
        // session of the holder, the key moves to it (same token), so that it lives and dies with
        // the session the holder now renews.
        if (current.getSessionId() != acquire.getSessionId()) {
          write(key, current.getValue(), acquire.getSessionId(), acquire.getRequestId(), events);
        }
        response.setAcquired(true).setToken(current.getCreateRevision());
        return new Applied(ok(response.build().toByteString()), events, NONE);
      }
      if (!sameHolder || current.getLeaseRequestId() > acquire.getRequestId()) {
        response.setAcquired(false).setHolder(holder);
        return new Applied(ok(response.build().toByteString()), events, NONE);
      }
      // The same holder gave that tenure up: a new tenure replaces it, with a new token. The old
      // one's delete and the new one's put share one revision, the delete first.
      detach(current);
      keys.remove(key);
      countLease(key, -1);
    }
    int replacedAt = events.size();
    KeyValue kv =
        write(
            key,
            ByteString.copyFromUtf8(acquire.getHolder()),
            acquire.getSessionId(),
            acquire.getRequestId(),
            events);
    if (current != null) {
      events.add(replacedAt, deleted(current, "replaced by a new tenure of the same holder"));
    }
    response.setAcquired(true).setToken(kv.getCreateRevision());
    return new Applied(ok(response.build().toByteString()), events, NONE);
  }

  private Applied release(ReleaseRequest release, List<Event> events) {
    String key = LEASE_PREFIX + release.getName();
    KeyValue current = keys.get(key);
    boolean ours =
        current != null
            && current.getCreateRevision() == release.getToken()
            && current.getValue().toStringUtf8().equals(release.getHolder());
    if (ours) {
      remove(key, "released", events);
    }
    return new Applied(
        ok(ReleaseResponse.newBuilder().setReleased(ours).build().toByteString()), events, NONE);
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
    if (sessionId != 0) {
      sessions.get(sessionId).keys().add(key);
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
    events.add(deleted(current, cause));
    return true;
  }

  private void detach(KeyValue kv) {
    Session session = sessions.get(kv.getSessionId());
    if (session != null) {
      session.keys().remove(kv.getKey());
    }
  }

  private void countLease(String key, int delta) {
    if (key.startsWith(LEASE_PREFIX)) {
      heldLeases += delta;
    }
  }

  private Event deleted(KeyValue gone, String cause) {
    return Event.newBuilder()
        .setType(Event.Type.DELETE)
        .setKv(gone.toBuilder().setModRevision(revision))
        .setCause(cause)
        .build();
  }

  private void forgetIdleClients(long index) {
    clients.values().removeIf(c -> index - c.lastIndex > CLIENT_RETENTION_ENTRIES);
  }

  private static CallId callOf(Command command) {
    switch (command.getKindCase()) {
      case GRANT:
        return command.getGrant().getCall();
      case REVOKE:
        return command.getRevoke().getCall();
      case PUT:
        return command.getPut().getCall();
      case DELETE:
        return command.getDelete().getCall();
      case COMPARE_AND_SET:
        return command.getCompareAndSet().getCall();
      case ACQUIRE:
        return command.getAcquire().getCall();
      case RELEASE:
        return command.getRelease().getCall();
      default:
        return null; // written by the cluster itself
    }
  }

  private static Reply ok(ByteString response) {
    return Reply.newBuilder().setOk(response).build();
  }

  private static Applied failed(Failure.Code code, String message) {
    Reply reply =
        Reply.newBuilder()
            .setFailure(Failure.newBuilder().setCode(code).setMessage(message))
            .build();
    return new Applied(reply, List.of(), NONE);
  }

  private static Applied sessionNotFound(long sessionId) {
    return failed(
        Failure.Code.SESSION_NOT_FOUND,
        "session " + sessionId + " does not exist (expired, revoked, or never granted)");
  }

  // ---- reads ----

  synchronized GetResponse get(GetRequest get) {
    GetResponse.Builder response = GetResponse.newBuilder().setRevision(revision);
    if (get.getPrefix()) {
      for (KeyValue kv : keys.tailMap(get.getKey(), true).values()) {
        if (!kv.getKey().startsWith(get.getKey())) {
          break;
        }
        response.addKvs(kv);
      }
    } else {
      KeyValue kv = keys.get(get.getKey());
      if (kv != null) {
        response.addKvs(kv);
      }
    }
    return response.build();
  }

  synchronized boolean hasSession(long sessionId) {
    return sessions.containsKey(sessionId);
  }

  /** {@return every session's id and TTL, for the keeper to arm after a restart or snapshot} */
  synchronized Map<Long, Long> sessionTtls() {
    Map<Long, Long> ttls = new LinkedHashMap<>();
    sessions.values().forEach(s -> ttls.put(s.id(), s.ttlMillis()));
    return ttls;
  }

  synchronized Counts counts() {
    return Counts.newBuilder()
        .setSessions(sessions.size())
        .setKeys(keys.size())
        .setHeldLeases(heldLeases)
        .setRevision(revision)
        .build();
  }

  synchronized long revision() {
    return revision;
  }

  // ---- snapshots ----

  /**
   * Writes the whole state: a header (magic, format number) and the body as one message. Only
   * the copy of the state holds the lock (keys are immutable messages, so it copies references);
   * serialising and writing do not, so reads and keep-alives are not held up by the disk.
   */
  void writeSnapshot(OutputStream out) throws IOException {
    SnapshotBody body = snapshotBody();
    DataOutputStream data = new DataOutputStream(out);
    data.writeInt(SNAPSHOT_MAGIC);
    data.writeInt(SNAPSHOT_FORMAT);
    body.writeDelimitedTo(data);
    data.flush();
  }

  private synchronized SnapshotBody snapshotBody() {
    SnapshotBody.Builder body =
        SnapshotBody.newBuilder().setRevision(revision).setLastSessionId(lastSessionId);
    for (Session s : sessions.values()) {
      body.addSessions(
          SessionRecord.newBuilder().setId(s.id()).setOwner(s.owner()).setTtlMillis(s.ttlMillis()));
    }
    body.addAllKeys(keys.values());
    // Clients in a fixed order, so that equal states write equal files.
    TreeMap<ClientKey, Calls> ordered =
        new TreeMap<>(
            (a, b) ->
                a.high() != b.high() ? Long.compare(a.high(), b.high()) : Long.compare(a.low(), b.low()));
    ordered.putAll(clients);
    ordered.forEach(
        (client, calls) -> {
          ClientCalls.Builder c =
              ClientCalls.newBuilder()
                  .setClientIdHigh(client.high())
                  .setClientIdLow(client.low())
                  .setLastIndex(calls.lastIndex);
          calls.replies.forEach(
              (callId, reply) -> c.addReplies(StoredReply.newBuilder().setCallId(callId).setReply(reply)));
          body.addClients(c);
        });
    return body.build();
  }

  /** Replaces the whole state with a snapshot's. */
  synchronized void readSnapshot(InputStream in) throws IOException {
    DataInputStream data = new DataInputStream(in);
    int magic = data.readInt();
    if (magic != SNAPSHOT_MAGIC) {
      throw new IOException("not a Leasehold snapshot (magic " + Integer.toHexString(magic) + ")");
    }
    int format = data.readInt();
    if (format != SNAPSHOT_FORMAT) {
      throw new IOException(
          "snapshot format " + format + " is not supported by this version (it reads format "
              + SNAPSHOT_FORMAT + "); upgrade the node");
    }
    SnapshotBody body;
    try {
      body = SnapshotBody.parseDelimitedFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("snapshot body is corrupt", e);
    }
    if (body == null) {
      throw new IOException("snapshot body is missing");
    }
    revision = body.getRevision();
    sessions.clear();
    keys.clear();
    clients.clear();
    heldLeases = 0;
    lastSessionId = body.getLastSessionId();
    for (SessionRecord s : body.getSessionsList()) {
      sessions.put(s.getId(), new Session(s.getId(), s.getOwner(), s.getTtlMillis(), new TreeSet<>()));
      lastSessionId = Math.max(lastSessionId, s.getId());
    }
    for (KeyValue kv : body.getKeysList()) {
      keys.put(kv.getKey(), kv);
      countLease(kv.getKey(), +1);
      if (kv.getSessionId() != 0) {
        Session s = sessions.get(kv.getSessionId());
        if (s == null) {
          throw new IOException("snapshot key " + kv.getKey() + " names a missing session " + kv.getSessionId());
        }
        s.keys().add(kv.getKey());
      }
    }
    for (ClientCalls c : body.getClientsList()) {
      Calls calls = new Calls();
      calls.lastIndex = c.getLastIndex();
      c.getRepliesList().forEach(r -> calls.replies.put(r.getCallId(), r.getReply()));
      clients.put(new ClientKey(c.getClientIdHigh(), c.getClientIdLow()), calls);
    }
  }
}
