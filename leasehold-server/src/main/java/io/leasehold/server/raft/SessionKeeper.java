package io.leasehold.server.raft;

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
 * <p><b>Arming.</b> A deadline means something only to the leader of the term it was {@linkplain
 * #rearm armed} for: until then (a follower's deadlines, or a new leader's before it re-armed) no
 * expiry is decided from it and a keep-alive is not judged by it. A new leader cannot know when
 * its predecessor last confirmed each session, so it first {@linkplain #markQuiet marks} every
 * session quiet, then re-arms each one to a full TTL from now, or, for a session the replicated
 * state already records as quiet since an earlier cluster time, to a TTL from then. So repeated
 * elections do not keep a dead holder's session alive forever, and a live one is never cut
 * short: a session is only counted quiet from a moment after its last confirmed keep-alive.
 *
 * <p><b>Quiet sessions.</b> A keep-alive of a quiet session is not confirmed from here alone: the
 * leader first writes a {@code Heard} entry (so that no later leader counts the session as quiet
 * from before this keep-alive), then {@linkplain #confirmHeard confirms} it.
 *
 * <p><b>Expiry and keep-alives are ordered.</b> Both judge a session under its lock, reading the
 * clock inside it, and a session judged expired stays expired for the term: a keep-alive that
 * was delayed past the judgement cannot extend it any more.
 */
public final class SessionKeeper {

  /** {@link #keepAlive} and {@link #confirmHeard}: the session was extended. */
  static final long ALIVE = -1;

  /** {@link #keepAlive} and {@link #confirmHeard}: the session is gone or its deadline passed. */
  static final long GONE = -2;

  private final LongSupplier nanoClock;
  private final Map<Long, Deadline> deadlines = new ConcurrentHashMap<>();
  /** The term these deadlines were armed for; 0 when not armed. */
  private volatile long armedTerm;
  private volatile long maxSessionId;

  private static final class Deadline {
    final long ttlNanos;
    /** Read without the lock only to skip sessions far from their deadline. */
    volatile long expiresAt;
    /** A keep-alive needs a Heard entry first. */
    boolean quiet;
    /** Counts the times the session was marked quiet; a Heard answers for one epoch. */
    long epoch;
    /** Judged expired; the expiry is on its way through the log. */
    boolean dead;

    Deadline(long ttlNanos, long expiresAt) {
      this.ttlNanos = ttlNanos;
      this.expiresAt = expiresAt;
    }
  }

  public SessionKeeper(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
  }

  /** A session was granted (applied): it lives one TTL from now. */
  void granted(long sessionId, long ttlMillis) {
    long ttlNanos = ttlMillis * 1_000_000L;
    deadlines.put(sessionId, new Deadline(ttlNanos, nanoClock.getAsLong() + ttlNanos));
    if (sessionId > maxSessionId) {
      maxSessionId = sessionId;
    }
  }

  /** {@return milliseconds before the session's deadline as armed here; -1 when not armed} */
  public long remainingMillis(long sessionId) {
    Deadline d = deadlines.get(sessionId);
    if (d == null || armedTerm == 0) {
      return -1;
    }
    return Math.max(0, (d.expiresAt - nanoClock.getAsLong()) / 1_000_000L);
  }

  /** A session ended (applied). */
  void ended(long sessionId) {
    deadlines.remove(sessionId);
  }

  /**
   * A keep-alive of a session, on the leader of {@code term}. Extends the session by its TTL from
   * now, unless it is quiet (then a Heard entry must be written first), or its deadline has passed
   * in the term the deadlines are armed for (the expiry is then on its way: a session once expired
   * never comes back).
   *
   * @param term the term this node leads
   * @param quietInState whether the replicated state records the session as quiet
   * @return {@link #ALIVE}, {@link #GONE}, or the epoch to hand to {@link #confirmHeard} once a
   *     Heard entry naming the session is applied
   */
  long keepAlive(long sessionId, long term, boolean quietInState) {
    Deadline d = deadlines.get(sessionId);
    if (d == null) {
      return GONE;
    }
    synchronized (d) {
      if (d.quiet || quietInState) {
        return d.epoch;
      }
      return extend(d, term);
    }
  }

  /** {@link #keepAlive} on a leader that is armed, of a session not quiet: true if extended. */
  boolean keepAlive(long sessionId) {
    return keepAlive(sessionId, armedTerm, false) == ALIVE;
  }

  /**
   * A Heard entry naming the session was applied: confirms the keep-alive that wrote it, if the
   * session was not marked quiet again in the meantime.
   *
   * @param epoch what {@link #keepAlive} returned
   * @return {@link #ALIVE}, {@link #GONE}, or a new epoch: another Heard is needed
   */
  long confirmHeard(long sessionId, long term, long epoch) {
    Deadline d = deadlines.get(sessionId);
    if (d == null) {
      return GONE;
    }
    synchronized (d) {
      if (d.epoch != epoch) {
        return d.epoch;
      }
      long result = extend(d, term);
      if (result == ALIVE) {
        d.quiet = false;
      }
      return result;
    }
  }

  /** Extends {@code d} by its TTL from now; the caller holds its lock. */
  private long extend(Deadline d, long term) {
    // The clock is read under the lock that expired() judges under: a keep-alive cannot read the
    // time, be descheduled, and then extend a deadline that was judged passed in between.
    long now = nanoClock.getAsLong();
    if (term == armedTerm && (d.dead || now - d.expiresAt >= 0)) {
      return GONE;
    }
    // Two keep-alives may race; the later deadline wins, a deadline never moves back.
    if (now + d.ttlNanos - d.expiresAt > 0) {
      d.expiresAt = now + d.ttlNanos;
    }
    return ALIVE;
  }

  /** {@return the highest session id granted so far} */
  long maxSessionId() {
    return maxSessionId;
  }

  /**
   * First step of taking over as leader: marks every session up to {@code maxSessionId} quiet,
   * so that from now on each keep-alive of them writes a Heard entry before it is confirmed.
   */
  void markQuiet(long maxSessionId) {
    deadlines.forEach(
        (id, d) -> {
          if (id <= maxSessionId) {
            synchronized (d) {
              d.quiet = true;
              d.epoch++;
              d.dead = false;
            }
          }
        });
  }

  /**
   * Second step, after {@link #markQuiet} and after reading the cluster time {@code sinceMillis}
   * at the monotonic reading {@code nowNanos}: arms every session up to {@code maxSessionId} for
   * {@code term}. A session quiet in the replicated state since cluster time {@code q} expires one
   * TTL after that moment (cluster time never runs ahead of real time, so that is never earlier
   * than one TTL after its last confirmed keep-alive); any other session one TTL from now. A
   * session whose keep-alive was confirmed since {@link #markQuiet} keeps that deadline.
   *
   * @param quietSince the quiet sessions of the replicated state, with the time each became quiet
   */
  void rearm(long term, long maxSessionId, long nowNanos, long sinceMillis, Map<Long, Long> quietSince) {
    deadlines.forEach(
        (id, d) -> {
          if (id <= maxSessionId) {
            synchronized (d) {
              if (d.quiet) {
                Long q = quietSince.get(id);
                long silentFrom = q == null ? nowNanos : nowNanos - Math.max(0, sinceMillis - q) * 1_000_000L;
                d.expiresAt = silentFrom + d.ttlNanos;
              }
              d.dead = false;
            }
          }
        });
    armedTerm = term;
  }

  /** {@return the term the deadlines are armed for; 0 if none} */
  long armedTerm() {
    return armedTerm;
  }

  /** Forgets everything and arms the given sessions for a full TTL (after loading a snapshot). */
  void reset(Map<Long, Long> ttlMillisBySession) {
    armedTerm = 0;
    deadlines.clear();
    ttlMillisBySession.forEach(this::granted);
  }

  /**
   * {@return the sessions whose deadline has passed} Each is judged under its lock and stays
   * expired: no keep-alive extends it afterwards (until a new term re-arms it).
   */
  List<Long> expired() {
    long now = nanoClock.getAsLong();
    List<Long> expired = new ArrayList<>();
    deadlines.forEach(
        (id, d) -> {
          if (now - d.expiresAt >= 0) {
            synchronized (d) {
              if (d.dead || nanoClock.getAsLong() - d.expiresAt >= 0) {
                d.dead = true;
                expired.add(id);
              }
            }
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
