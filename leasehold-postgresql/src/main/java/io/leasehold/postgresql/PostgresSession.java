package io.leasehold.postgresql;

import java.util.concurrent.CompletableFuture;

/**
 * One row of the {@code sessions} table as this backend uses it: every lease of one TTL that the
 * backend acquires while the row lives is recorded on it, and one heartbeat statement renews them
 * all. A session ends for good when the database says it has expired (by its own clock) or it is
 * gone; the next acquire then opens a new one.
 *
 * <p>{@link #lastOkSentAt} is the holder-side ticker reading at which the last renewal that the
 * database confirmed was <em>sent</em>: the database measured the row's expiry from the moment it
 * received that renewal, which is later, so a deadline counted from here never outlasts the row.
 */
final class PostgresSession {

  /** The row's id. */
  final long id;

  /** The TTL every renewal extends the row by, in milliseconds. */
  final long ttlMillis;

  /** When the last confirmed renewal (or the opening, or an acquire that renewed it) was sent. */
  private long lastOkSentAt; // guarded by this

  /** Heartbeats failed since the last that succeeded. */
  private int failures; // guarded by this

  /** Why the session ended, once it has; null while it lives. */
  private volatile String ended;

  /** Completes with the outcome of the next heartbeat to finish. */
  private CompletableFuture<Long> next = new CompletableFuture<>(); // guarded by this

  PostgresSession(long id, long ttlMillis, long openedSentAt) {
    this.id = id;
    this.ttlMillis = ttlMillis;
    this.lastOkSentAt = openedSentAt;
  }

  synchronized long lastOkSentAt() {
    return lastOkSentAt;
  }

  synchronized int failures() {
    return failures;
  }

  String ended() {
    return ended;
  }

  /** A renewal sent at {@code sentAt} succeeded. */
  void renewed(long sentAt) {
    CompletableFuture<Long> done;
    synchronized (this) {
      if (sentAt - lastOkSentAt > 0) {
        lastOkSentAt = sentAt;
      }
      failures = 0;
      done = next;
      next = new CompletableFuture<>();
    }
    done.complete(sentAt);
  }

  /** A renewal (other than an acquire, which says nothing about the heartbeat) failed. */
  void failed(Throwable error) {
    CompletableFuture<Long> done;
    synchronized (this) {
      failures++;
      done = next;
      next = new CompletableFuture<>();
    }
    done.completeExceptionally(error);
  }

  /** The database no longer has this session live; every tenure on it is over. */
  void end(String reason) {
    CompletableFuture<Long> done;
    synchronized (this) {
      if (ended == null) {
        ended = reason;
      }
      done = next;
    }
    done.complete(null);
  }

  /** {@return the outcome of the next heartbeat to finish: its send time, or null if the session ended} */
  synchronized CompletableFuture<Long> nextHeartbeat() {
    return ended != null ? CompletableFuture.completedFuture(null) : next.copy();
  }
}
