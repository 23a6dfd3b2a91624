package io.leasehold.etcd;

import io.etcd.jetcd.Lease;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.Scheduler;
import io.leasehold.spi.Failures;
import io.leasehold.spi.LeaseRuntime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The session of one TTL: one etcd lease that every held lease of this backend with that TTL is
 * attached to, kept alive once per heartbeat interval however many leases use it. When the etcd
 * lease is gone (expired or revoked in the store), a new one is granted for the next acquire.
 *
 * <p><b>Retired grants.</b> A grant may come to carry a key that no holder believes in: a
 * transaction on it whose outcome stayed unknown or was answered after its holder gave up, or a
 * release that was not confirmed. Such a grant is {@linkplain #retire retired}: the next acquire
 * gets a new grant, and the retired one is kept alive only while it is <em>pinned</em> — by a
 * tenure the lease engine believes it holds on it, or an acquire still in flight on it. Once
 * nothing pins it, it lapses in etcd within its TTL, together with the key nobody believes in. A
 * grant that never had such a doubt is kept alive as long as the backend lives.
 *
 * <p>Keep-alives run on the backend's timer thread, and their send times are read from its ticker,
 * so a holder's deadline counts from when a successful keep-alive was <em>sent</em>. A failed
 * keep-alive changes nothing but the failure count: it never extends anything.
 */
final class Session {

  private static final Logger log = LoggerFactory.getLogger(Session.class);

  /** Called when the store no longer has a grant: every tenure attached to it is gone. */
  interface DeathListener {
    void grantDied(Grant grant, String reason);

    /** {@return the failure of {@code what} as the engine reports it; the store names refusals} */
    default io.leasehold.LeaseException failure(String what, Throwable error) {
      return unavailable(what, error);
    }
  }

  private final long ttlSeconds;
  private final Lease leases;
  private final LeaseRuntime runtime;
  private final DeathListener onDeath;
  private final Object lock = new Object();

  // Guarded by lock.
  private long intervalNanos;
  private long timeoutNanos;
  private Grant current;
  /** Retired grants still kept alive for the tenures on them. */
  private final List<Grant> retired = new ArrayList<>();
  private CompletableFuture<Grant> granting;
  private Scheduler.Cancellable tick = Scheduler.Cancellable.NONE;
  private boolean closed;

  Session(
      long ttlSeconds,
      Duration heartbeat,
      Duration timeout,
      Lease leases,
      LeaseRuntime runtime,
      DeathListener onDeath) {
    this.ttlSeconds = ttlSeconds;
    this.intervalNanos = heartbeat.toNanos();
    this.timeoutNanos = Math.min(heartbeat.toNanos(), timeout.toNanos());
    this.leases = leases;
    this.runtime = runtime;
    this.onDeath = onDeath;
  }

  long ttlSeconds() {
    return ttlSeconds;
  }

  /**
   * A lease joined: keep alive at least as often as its heartbeat, and give up on a keep-alive
   * no later than its operation timeout (so that its retries see fresh answers).
   */
  void useSettings(Duration heartbeat, Duration timeout) {
    synchronized (lock) {
      intervalNanos = Math.min(intervalNanos, heartbeat.toNanos());
      timeoutNanos = Math.min(timeoutNanos, Math.min(intervalNanos, timeout.toNanos()));
    }
  }

  /**
   * The grant to attach a new key to: the current one if the store may still hold it, else a new
   * one. Completes exceptionally if etcd cannot be reached.
   *
   * @param timeoutNanos how long a new grant may take
   */
  CompletableFuture<Grant> grant(long timeoutNanos) {
    CompletableFuture<Grant> pending;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(
            new IllegalStateException("the etcd backend is closed"));
      }
      Grant g = current;
      if (g != null && g.dead == null
          && runtime.ticker().read() - g.lastOkSentAt < TimeUnit.SECONDS.toNanos(ttlSeconds)) {
        return CompletableFuture.completedFuture(g);
      }
      if (granting != null) {
        return granting;
      }
      pending = granting = new CompletableFuture<>();
    }
    long sent = runtime.ticker().read();
    Scheduler.Cancellable timer =
        runtime.timers().schedule(
            () -> settleGrant(pending, null, new LeaseTimeoutException(
                "etcd did not grant a lease of " + ttlSeconds + " s within "
                    + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms", null)),
            timeoutNanos);
    leases.grant(ttlSeconds)
        .whenComplete(
            (response, error) -> {
              timer.cancel();
              if (error != null) {
                settleGrant(pending, null, onDeath.failure("granting an etcd lease failed", error));
              } else if (response.getTTL() < ttlSeconds) {
                settleGrant(pending, null, new LeaseProtocolException("etcd granted a lease of " + response.getTTL() + " s for a request of "
                        + ttlSeconds + " s", null));
              } else {
                if (response.getTTL() > ttlSeconds) {
                  log.info("etcd raised the lease TTL from {} s to its minimum of {} s; holders still"
                      + " stop at their own, shorter, deadline", ttlSeconds, response.getTTL());
                }
                Grant g = new Grant(response.getID(), sent);
                if (!settleGrant(pending, g, null)) {
                  leases.revoke(g.id); // too late or closed: nobody uses it
                }
              }
            });
    return pending;
  }

  /**
   * {@code g} may carry a key that no holder believes in: the next acquire gets a new grant, and
   * {@code g} is kept alive only while pinned, so that such a key expires with it.
   */
  void retire(Grant g) {
    synchronized (lock) {
      if (g.retired || g.dead != null || closed) {
        return;
      }
      g.retired = true;
      if (current == g) {
        current = null;
      }
      retired.add(g);
      if (tick == Scheduler.Cancellable.NONE) {
        tick = runtime.timers().schedule(this::keepAlive, intervalNanos);
      }
    }
    log.info("etcd lease {} may hold a key no holder knows of (an acquire's outcome is unknown or a"
        + " release unconfirmed); the next acquire gets a new one, and it lapses once nothing held"
        + " is on it", Long.toHexString(g.id));
  }

  /** @return whether {@code grant} became the current grant */
  private boolean settleGrant(CompletableFuture<Grant> pending, Grant grant, Throwable failure) {
    boolean first;
    synchronized (lock) {
      first = granting == pending && !closed;
      if (granting == pending) {
        granting = null;
      }
      if (first && grant != null) {
        current = grant;
        if (tick == Scheduler.Cancellable.NONE) {
          tick = runtime.timers().schedule(this::keepAlive, intervalNanos);
        }
      }
    }
    if (grant != null && first) {
      log.debug("Granted etcd lease {} with a TTL of {} s", Long.toHexString(grant.id), ttlSeconds);
      pending.complete(grant);
    } else if (failure != null) {
      pending.completeExceptionally(failure);
    } else {
      pending.completeExceptionally(new LeaseStoreUnavailableException(
          "the etcd backend closed while granting a lease", null));
    }
    return first && grant != null;
  }

  /**
   * The periodic keep-alive of the current grant and of the retired ones still pinned; schedules
   * the next. Runs on the timer thread.
   */
  private void keepAlive() {
    List<Grant> due = new ArrayList<>(1);
    synchronized (lock) {
      // A retired grant nothing pins any more is let go: it lapses in etcd.
      retired.removeIf(r -> r.dead != null || r.pins.get() <= 0);
      if (closed || (current == null && retired.isEmpty())) {
        tick = Scheduler.Cancellable.NONE;
        return;
      }
      if (current != null) {
        due.add(current);
      }
      due.addAll(retired);
      tick = runtime.timers().schedule(this::keepAlive, intervalNanos);
    }
    due.forEach(this::send);
  }

  /**
   * The outcome of the keep-alive of {@code g} in flight, or of one sent now if none is: the
   * ticker reading when the keep-alive that succeeded was sent. While keep-alives fail, renewals
   * wait on this instead of answering at once, so the first success reaches every lease at
   * once. However many leases ask, at most one keep-alive is in flight.
   */
  CompletableFuture<Long> nextKeepAlive(Grant g) {
    CompletableFuture<Long> outcome;
    synchronized (lock) {
      outcome = g.outcome;
    }
    send(g);
    return outcome;
  }

  /** Sends one keep-alive of {@code g}, unless one is in flight. */
  private void send(Grant g) {
    long timeout;
    synchronized (lock) {
      if (closed || g.inFlight || g.dead != null) {
        return;
      }
      g.inFlight = true;
      timeout = timeoutNanos;
    }
    long sent = runtime.ticker().read();
    CompletableFuture<Void> done = new CompletableFuture<>();
    Scheduler.Cancellable timer =
        runtime.timers().schedule(
            () -> done.completeExceptionally(new LeaseTimeoutException(
                "no answer within " + TimeUnit.NANOSECONDS.toMillis(timeout) + " ms", null)),
            timeout);
    leases.keepAliveOnce(g.id).whenComplete((response, error) -> {
      timer.cancel();
      if (error != null) {
        done.completeExceptionally(error);
      } else {
        done.complete(null);
      }
    });
    done.whenComplete(keepAliveAnswered(g, sent));
  }

  private BiConsumer<Void, Throwable> keepAliveAnswered(Grant g, long sent) {
    return (ok, error) -> {
      String deathReason = null;
      boolean firstNotFound = false;
      int failures = 0;
      CompletableFuture<Long> outcome;
      synchronized (lock) {
        g.inFlight = false;
        outcome = g.outcome;
        g.outcome = new CompletableFuture<>();
        if (g.dead != null) {
          outcome.completeExceptionally(new IllegalStateException(g.dead));
          return;
        }
        if (error == null) {
          if (sent - g.lastOkSentAt > 0) {
            g.lastOkSentAt = sent;
          }
          g.notFound = false;
          failures = g.failures;
          g.failures = 0;
          g.lastFailure = null;
        } else if (isLeaseNotFound(error) && g.notFound && sent - g.notFoundAt >= 0) {
          // The second "not found" in a row, to a keep-alive sent after the first came back.
          deathReason = "etcd lease " + Long.toHexString(g.id) + " (TTL " + ttlSeconds
              + " s) no longer exists in etcd: it expired or was revoked there";
          g.dead = deathReason;
          if (current == g) {
            current = null;
          }
        } else {
          if (isLeaseNotFound(error) && !g.notFound) {
            // One member's word is not enough: a leader that was paused answers from its own
            // lessor until it hears of the new term, and knows nothing of a lease granted
            // meanwhile (seen in the fault harness, etcd 3.4.23, 16 ms after the leader resumed).
            // Asked again, the cluster answers; until then nothing is extended, so a lease that
            // really is gone costs at most one more keep-alive round to report.
            g.notFound = true;
            g.notFoundAt = runtime.ticker().read();
            firstNotFound = true;
          }
          g.failures++;
          g.lastFailure = rootMessage(error);
          failures = g.failures;
        }
      }
      if (error == null) {
        outcome.complete(sent);
      } else {
        outcome.completeExceptionally(error);
      }
      if (deathReason != null) {
        log.warn("{}; every lease held with it is lost", deathReason);
        onDeath.grantDied(g, deathReason);
      } else if (error == null && failures > 0) {
        log.info("Keep-alive of etcd lease {} succeeded again after {} failure(s)",
            Long.toHexString(g.id), failures);
      } else if (firstNotFound) {
        log.info("etcd answered that lease {} does not exist; asking again before believing it (a"
            + " member that was paused answers from stale state until it hears of the new term)",
            Long.toHexString(g.id));
      } else if (error != null && failures == 1) {
        log.warn("Keep-alive of etcd lease {} failed: {}; the leases held with it stay held only"
                + " until their safe deadlines unless a keep-alive succeeds",
            Long.toHexString(g.id), rootMessage(error));
      }
    };
  }

  /**
   * {@return the grant {@code id} if this session keeps it alive (current, or retired and still
   * pinned), else null}
   */
  Grant liveGrant(long id) {
    synchronized (lock) {
      if (current != null && current.id == id && current.dead == null) {
        return current;
      }
      for (Grant g : retired) {
        if (g.id == id && g.dead == null && g.pins.get() > 0) {
          return g;
        }
      }
      return null;
    }
  }

  /** The store reported the grant gone some other way (a put on it failed). */
  void markDead(Grant g, String reason) {
    synchronized (lock) {
      if (g.dead != null) {
        return;
      }
      g.dead = reason;
      if (current == g) {
        current = null;
      }
    }
    log.warn("{}; every lease held with it is lost", reason);
    onDeath.grantDied(g, reason);
  }

  /** Stops keeping alive; returns the grants to revoke: the current one and the retired ones. */
  List<Grant> close() {
    synchronized (lock) {
      closed = true;
      tick.cancel();
      List<Grant> all = new ArrayList<>(retired);
      if (current != null) {
        all.add(0, current);
      }
      current = null;
      retired.clear();
      return all;
    }
  }

  static boolean isLeaseNotFound(Throwable error) {
    for (Throwable e = error; e != null; e = e.getCause()) {
      if (e instanceof EtcdException ee && ee.getErrorCode() == ErrorCode.NOT_FOUND) {
        return true;
      }
      if (e.getMessage() != null && e.getMessage().contains("requested lease not found")) {
        return true;
      }
    }
    return false;
  }

  static LeaseStoreUnavailableException unavailable(String what, Throwable error) {
    return new LeaseStoreUnavailableException(what + ": " + rootMessage(error), unwrap(error));
  }

  static Throwable unwrap(Throwable error) {
    return Failures.unwrap(error);
  }

  static String rootMessage(Throwable error) {
    return Failures.rootMessage(error);
  }

  /** One etcd lease as this backend uses it. */
  static final class Grant {
    final long id;
    /** Ticker reading when the grant or the last successful keep-alive was sent. */
    volatile long lastOkSentAt;
    /** Why the store no longer has it, or null while it may. */
    volatile String dead;
    /**
     * Whether a keep-alive was answered "not found" since the last success, and the ticker reading
     * when it came back. The grant is dead only when a keep-alive sent after that is answered so
     * too. Guarded by Session.lock.
     */
    boolean notFound;
    long notFoundAt;
    /** Keep-alives failed since the last success, and the last failure's message. */
    volatile int failures;
    volatile String lastFailure;
    /** Tenures the engine believes in on this grant, plus acquires in flight on it. */
    final AtomicInteger pins = new AtomicInteger();
    /** No new acquires on it; kept alive only while pinned. Guarded by Session.lock. */
    boolean retired;
    boolean inFlight; // guarded by Session.lock
    /** Completes with the outcome of the keep-alive in flight or the next one; guarded by lock. */
    CompletableFuture<Long> outcome = new CompletableFuture<>();

    Grant(long id, long sentAt) {
      this.id = id;
      this.lastOkSentAt = sentAt;
    }

    /** Keeps this grant alive, should it be retired, for one more tenure or acquire. */
    void pin() {
      pins.incrementAndGet();
    }

    /** One tenure or acquire less; a retired grant with none left lapses. */
    void unpin() {
      if (pins.decrementAndGet() < 0) {
        pins.incrementAndGet();
        log.warn("etcd lease {} unpinned more often than pinned; ignored", Long.toHexString(id));
      }
    }
  }
}
