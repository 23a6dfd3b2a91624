package io.leasehold.server;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * When each session expires, on this node's monotonic clock. Renewals are not log entries: the
 * leader keeps these deadlines in memory, so a keep-alive costs no disk write. Every node tracks
 * the sessions it applies, but only the leader's deadlines count, and only the leader expires
 * sessions (through the log).
 *
 * <p>A new leader does not know when the old one last heard each keep-alive, so on taking over it
 * {@linkplain #rearmAll re-arms} every session to a full TTL from now. That can keep a dead
 * holder's session up to one TTL plus the election longer, and never ends a live one earlier than
 * the old leader would have.
 */
final class SessionKeeper {

  private final LongSupplier nanoClock;
  private final Map<Long, Deadline> deadlines = new ConcurrentHashMap<>();

  private static final class Deadline {
    final long ttlNanos;
    volatile long expiresAt;

    Deadline(long ttlNanos, long expiresAt) {
      this.ttlNanos = ttlNanos;
      this.expiresAt = expiresAt;
    }
  }

  SessionKeeper(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
  }

  /** A session was granted (applied): it lives one TTL from now. */
  void granted(long sessionId, long ttlMillis) {
    long ttlNanos = ttlMillis * 1_000_000L;
    deadlines.put(sessionId, new Deadline(ttlNanos, nanoClock.getAsLong() + ttlNanos));
  }

  /** A session ended (applied). */
  void ended(long sessionId) {
    deadlines.remove(sessionId);
  }

  /**
   * Extends a session by its TTL from now, unless its deadline has already passed: the expiry is
   * then on its way through the log, and a session once expired never comes back.
   *
   * @return false if this node does not know the session, or its deadline passed
   */
  boolean keepAlive(long sessionId) {
    Deadline d = deadlines.get(sessionId);
    if (d == null) {
      return false;
    }
    long now = nanoClock.getAsLong();
    // Two keep-alives may race; the later deadline wins, a deadline never moves back.
    synchronized (d) {
      if (now - d.expiresAt >= 0) {
        return false;
      }
      if (now + d.ttlNanos - d.expiresAt > 0) {
        d.expiresAt = now + d.ttlNanos;
      }
    }
    return true;
  }

  /** This node became the leader: every session gets at least a full TTL from now. */
  void rearmAll() {
    long now = nanoClock.getAsLong();
    for (Deadline d : deadlines.values()) {
      synchronized (d) {
        if (now + d.ttlNanos - d.expiresAt > 0) {
          d.expiresAt = now + d.ttlNanos;
        }
      }
    }
  }

  /** Forgets everything and arms the given sessions for a full TTL (after loading a snapshot). */
  void reset(Map<Long, Long> ttlMillisBySession) {
    deadlines.clear();
    ttlMillisBySession.forEach(this::granted);
  }

  /** {@return the sessions whose deadline has passed} */
  List<Long> expired() {
    long now = nanoClock.getAsLong();
    List<Long> expired = new ArrayList<>();
    deadlines.forEach(
        (id, d) -> {
          if (now - d.expiresAt >= 0) {
            expired.add(id);
          }
        });
    return expired;
  }

  /** {@return how many sessions are past their deadline now (for tests; changes nothing)} */
  int overdue() {
    long now = nanoClock.getAsLong();
    return (int) deadlines.values().stream().filter(d -> now - d.expiresAt >= 0).count();
  }

  /** {@return how many sessions this node tracks} */
  int size() {
    return deadlines.size();
  }
}
