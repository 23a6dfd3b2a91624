package io.leasehold.server.replicated;

import io.leasehold.server.state.SessionRecord;
import io.leasehold.server.state.SnapshotBody;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The sessions of the replicated state, by id, with what is counted over them: how many are quiet
 * (a new leader's mark, see {@link CoreState}), how many each identity has (for
 * --max-sessions-per-identity), and the greatest id granted. The keys attached to a session are
 * the state's business; this table only keeps each {@link Session}'s set of them.
 *
 * <p>Deterministic (ordered by id) and not thread-safe: {@code CoreState}'s lock guards it.
 */
final class SessionTable {

  /** The greatest session id granted; ids are unique and increase, even within one entry. */
  private long lastId;

  private final NavigableMap<Long, Session> byId = new TreeMap<>();
  private int quiet;
  /** Live sessions per granting identity (stored form). */
  private final Map<String, Integer> perIdentity = new HashMap<>();

  /** {@return the session, or null} */
  Session get(long id) {
    return byId.get(id);
  }

  boolean contains(long id) {
    return byId.containsKey(id);
  }

  /** {@return every session, in id order} */
  Collection<Session> all() {
    return byId.values();
  }

  int size() {
    return byId.size();
  }

  /** {@return how many sessions {@code identity} (stored form) has} */
  int countOf(String identity) {
    return perIdentity.getOrDefault(identity, 0);
  }

  /** {@return the greatest session id granted} */
  long lastId() {
    return lastId;
  }

  /**
   * {@return the id for a session granted by the entry at {@code index}}: the entry's index when it
   * grants one session (as every entry did before batches); the next free number when an entry
   * grants several. Deterministic either way.
   */
  long nextId(long index) {
    lastId = Math.max(lastId + 1, index);
    return lastId;
  }

  void add(Session session) {
    byId.put(session.id, session);
    count(session.identity, +1);
    if (session.quietSince >= 0) {
      quiet++;
    }
    lastId = Math.max(lastId, session.id);
  }

  /** {@return the session removed, or null if there was none} */
  Session remove(long id) {
    Session session = byId.remove(id);
    if (session != null) {
      count(session.identity, -1);
      if (session.quietSince >= 0) {
        quiet--;
      }
    }
    return session;
  }

  /**
   * A new leader's mark: every session up to {@code maxId} not heard since {@code sinceMillis} is
   * quiet since then.
   */
  void markQuiet(long maxId, long sinceMillis) {
    for (Session s : byId.headMap(maxId, true).values()) {
      // A Heard stamped at or after `since` was written after this decision: the session was
      // confirmed since, so the mark would be stale.
      if (s.quietSince < 0 && s.heardAt < sinceMillis) {
        s.quietSince = sinceMillis;
        quiet++;
      }
    }
  }

  /** A leader confirmed session {@code id} at cluster time {@code nowMillis}: it is quiet no more. */
  void heard(long id, long nowMillis) {
    Session s = byId.get(id);
    if (s != null) {
      if (s.quietSince >= 0) {
        quiet--;
      }
      s.quietSince = -1;
      s.heardAt = nowMillis;
    }
  }

  boolean hasQuiet() {
    return quiet > 0;
  }

  /** {@return the quiet sessions, each with the cluster time since which it is quiet} */
  Map<Long, Long> quietSince() {
    Map<Long, Long> since = new HashMap<>();
    if (quiet > 0) {
      byId.values().forEach(s -> {
        if (s.quietSince >= 0) {
          since.put(s.id, s.quietSince);
        }
      });
    }
    return since;
  }

  /** {@return every session's id and TTL, in id order} */
  Map<Long, Long> ttls() {
    Map<Long, Long> ttls = new LinkedHashMap<>();
    byId.values().forEach(s -> ttls.put(s.id, s.ttlMillis));
    return ttls;
  }

  /** Adds every session to a snapshot, in id order (and the greatest id granted). */
  void writeTo(SnapshotBody.Builder body) {
    body.setLastSessionId(lastId);
    for (Session s : byId.values()) {
      SessionRecord.Builder record =
          SessionRecord.newBuilder().setId(s.id).setOwner(s.owner).setTtlMillis(s.ttlMillis).setRevoked(s.revoked).setIdentity(s.identity);
      if (s.quietSince >= 0) {
        record.setQuietSinceMillis(s.quietSince);
      }
      if (s.heardAt >= 0) {
        record.setHeardAtMillis(s.heardAt);
      }
      body.addSessions(record);
    }
  }

  /** Replaces every session with a snapshot's (their keys are added by the state afterwards). */
  void readFrom(List<SessionRecord> records, long lastSessionId) {
    byId.clear();
    perIdentity.clear();
    quiet = 0;
    lastId = lastSessionId;
    for (SessionRecord r : records) {
      Session s = new Session(r.getId(), r.getOwner(), r.getTtlMillis(), r.getIdentity());
      if (r.hasQuietSinceMillis()) {
        s.quietSince = r.getQuietSinceMillis();
      }
      if (r.hasHeardAtMillis()) {
        s.heardAt = r.getHeardAtMillis();
      }
      s.revoked = r.getRevoked();
      add(s);
    }
  }

  private void count(String identity, int delta) {
    perIdentity.merge(identity, delta, (a, b) -> a + b == 0 ? null : a + b);
  }
}
