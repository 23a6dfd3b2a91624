package io.leasehold.client;

import io.grpc.stub.StreamObserver;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.RevokedTenure;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The core sessions of one backend, one per TTL, kept alive together: every round sends one
 * keep-alive naming all sessions on one stream, so heartbeat traffic does not grow with the number
 * of leases. A lease's renewal is answered from the latest round the leader confirmed.
 *
 * <p><b>Retired sessions.</b> A session may come to carry a key that no holder believes in: an
 * acquire on it whose outcome stayed unknown or whose answer came after its holder gave up, or a
 * release that was not confirmed. Such a session is {@linkplain #retire retired}: new acquires of
 * its TTL get a new session, and it is kept alive only while it is <em>pinned</em> — by a tenure
 * the lease engine believes it holds on it, or an acquire still in flight on it. Once nothing
 * pins it, the rounds stop naming it and the core expires it within its TTL, together with the
 * key nobody believes in. A session that never had such a doubt is kept alive as long as the
 * backend lives, so an acquire never waits for a new session or a keep-alive.
 */
final class Sessions implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Sessions.class);

  /** One session: the TTL its keys live for after the last keep-alive the leader confirmed. */
  static final class Session {
    /** {@link #id} before a grant was asked for, and again after one failed. */
    static final long NOT_GRANTED = 0;
    /** {@link #id} while a grant is in flight. */
    static final long GRANTING = -1;

    final long ttlMillis;
    final long intervalNanos;
    /** The core's session id once granted (always above 0), else {@code NOT_GRANTED} or {@code GRANTING}. */
    volatile long id = NOT_GRANTED;
    /** Ticker reading when the latest confirmed keep-alive (or the grant) was sent. */
    volatile long confirmedSentAt;
    volatile boolean ended;
    /** Why it ended, once it did. */
    volatile LeaseLost endedBecause;
    /**
     * The identity of the cluster that granted it (from the grant's answer, or for a core too old
     * to say so, the first keep-alive answer that named one); null while unknown.
     */
    volatile String clusterId;
    /** No new acquires on it; kept alive only while pinned. */
    volatile boolean retired;
    /** Tenures the engine believes in on this session, plus acquires in flight on it. */
    final AtomicInteger pins = new AtomicInteger();
    final CompletableFuture<Session> granted = new CompletableFuture<>();
    /** Completes when the next round is answered: true if the session is alive. */
    final AtomicReference<CompletableFuture<Boolean>> nextRound =
        new AtomicReference<>(new CompletableFuture<>());

    Session(long ttlMillis) {
      this.ttlMillis = ttlMillis;
      this.intervalNanos = ttlMillis * 1_000_000L / 4;
    }

    /** {@return whether the core granted this session (it may have ended since)} */
    boolean isGranted() {
      return id > 0;
    }

    /** {@return whether a confirmation sent at or after {@code sinceNanos} is known} */
    boolean confirmedSince(long sinceNanos) {
      return confirmedSentAt - sinceNanos >= 0;
    }
  }

  private final CoreClient client;
  private final Ticker ticker;
  private final Scheduler timers;
  private final String owner;
  private final BiConsumer<Long, LeaseLost> onSessionEnded;
  /**
   * The identity of the cluster the keep-alives were last answered by (null until one answered
   * with one). Another one means another cluster (one restored from a backup, at the same
   * addresses): nothing it confirms says anything about the sessions of the first. A session that
   * knows no identity of its own (granted by a core too old to name one) goes by this.
   */
  private volatile String clusterId;
  private final Consumer<RevokedTenure> onRevoked;
  /** The session new acquires of each TTL use. */
  private final Map<Long, Session> byTtl = new ConcurrentHashMap<>();
  /** Retired sessions still pinned, or not yet found unpinned by a round. */
  private final Set<Session> retired = ConcurrentHashMap.newKeySet();
  private final Map<Long, Long> sentAtBySequence = new ConcurrentHashMap<>();
  private final Object streamLock = new Object();
  private StreamObserver<KeepAliveRequest> stream;
  /** The response side of {@link #stream}; a late failure of an older stream is ignored. */
  private Responses streamResponses;
  private long sequence;
  private volatile boolean closed;
  private Scheduler.Cancellable nextTick;

  private final long roundTimeoutNanos;
  private final Runnable onGranted;

  Sessions(
      CoreClient client,
      Ticker ticker,
      Scheduler timers,
      String owner,
      Duration roundTimeout,
      Runnable onGranted,
      BiConsumer<Long, LeaseLost> onSessionEnded,
      Consumer<RevokedTenure> onRevoked) {
    this.roundTimeoutNanos = roundTimeout.toNanos();
    this.onGranted = onGranted;
    this.client = client;
    this.ticker = ticker;
    this.timers = timers;
    this.owner = owner;
    this.onSessionEnded = onSessionEnded;
    this.onRevoked = onRevoked;
  }

  /**
   * The live session for {@code ttl}, granted if there is none yet (or the last one ended).
   *
   * @return completes when the session is granted
   */
  CompletableFuture<Session> forTtl(Duration ttl) {
    // Whole milliseconds, rounded up: the store must never keep a session shorter than the TTL
    // the holder computes its deadline from.
    long ttlMillis = Math.max(1, (ttl.toNanos() + 999_999) / 1_000_000);
    Session s =
        byTtl.compute(
            ttlMillis,
            (k, existing) -> existing != null && !existing.ended && !existing.retired ? existing : new Session(k));
    if (s.id == Session.NOT_GRANTED && !s.granted.isDone()) {
      grant(s);
    }
    return s.granted;
  }

  /** Keeps {@code s} alive, should it be retired, on behalf of one more tenure or acquire. */
  void pin(Session s) {
    s.pins.incrementAndGet();
  }

  /** One tenure or acquire less on {@code s}; a retired session with none left lapses. */
  void unpin(Session s) {
    if (s.pins.decrementAndGet() < 0) {
      s.pins.incrementAndGet();
      log.warn("session {} unpinned more often than pinned; ignored", s.id);
    }
  }

  /**
   * {@code s} may carry a key that no holder believes in: no new acquire uses it, and it is kept
   * alive only while pinned, so that such a key expires with it.
   */
  void retire(Session s) {
    synchronized (s) {
      if (s.retired || s.ended) {
        return;
      }
      s.retired = true;
    }
    retired.add(s);
    byTtl.remove(s.ttlMillis, s);
    log.info(
        "session {} may hold a key no holder knows of (an acquire's outcome is unknown or a release"
            + " unconfirmed); new acquires use a new session, and it lapses once nothing held is on it",
        s.id);
  }

  private void grant(Session s) {
    synchronized (s) {
      if (s.id != Session.NOT_GRANTED || s.granted.isDone()) {
        return; // granted, or being granted
      }
      s.id = Session.GRANTING;
    }
    long sentAt = ticker.read();
    GrantRequest request =
        GrantRequest.newBuilder().setCall(client.newCall()).setOwner(owner).setTtlMillis(s.ttlMillis).build();
    client
        .<GrantResponse>call((stub, out) -> stub.grant(request, out))
        .whenComplete(
            (response, error) -> {
              if (error != null) {
                synchronized (s) {
                  s.id = Session.NOT_GRANTED; // the next acquire grants again
                }
                byTtl.remove(s.ttlMillis, s);
                s.granted.completeExceptionally(error);
                return;
              }
              s.confirmedSentAt = sentAt;
              s.clusterId = response.getClusterId().isEmpty() ? null : response.getClusterId();
              s.id = response.getSessionId();
              log.debug("session {} granted (ttl {} ms)", s.id, s.ttlMillis);
              onGranted.run();
              s.granted.complete(s);
              scheduleRound(0);
            });
  }

  /**
   * Completes when a round sent now (or one already in flight) is answered: true if the session
   * is still alive, false if it ended; exceptionally if no leader answered.
   */
  CompletableFuture<Boolean> confirm(Session s) {
    if (s.ended) {
      return CompletableFuture.completedFuture(false);
    }
    CompletableFuture<Boolean> next = s.nextRound.get();
    // A round in flight answers for every renewal that waits; only without one is a round sent
    // now, so failing rounds do not multiply with the number of leases.
    if (sentAtBySequence.isEmpty()) {
      scheduleRound(0);
    }
    return next;
  }

  private void scheduleRound(long delayNanos) {
    synchronized (streamLock) {
      if (closed) {
        return;
      }
      if (nextTick != null) {
        if (delayNanos > 0) {
          return; // a round is already scheduled
        }
        nextTick.cancel();
      }
      nextTick = timers.schedule(this::round, delayNanos);
    }
  }

  /** Sends one keep-alive for every session to keep alive, then schedules the next. */
  private void round() {
    List<Long> ids = new ArrayList<>();
    long interval = Long.MAX_VALUE;
    for (Session s : byTtl.values()) {
      interval = Math.min(interval, s.intervalNanos);
      if (s.isGranted() && !s.ended) {
        ids.add(s.id);
      }
    }
    for (Session s : retired) {
      if (s.ended || s.pins.get() <= 0) {
        retired.remove(s); // nothing believed on it any more: it lapses in the core
      } else {
        interval = Math.min(interval, s.intervalNanos);
        ids.add(s.id);
      }
    }
    synchronized (streamLock) {
      nextTick = null;
      if (closed || ids.isEmpty()) {
        return;
      }
      long seq = ++sequence;
      sentAtBySequence.put(seq, ticker.read());
      try {
        if (stream == null) {
          streamResponses = new Responses();
          stream = client.keepAlive(streamResponses);
        }
        stream.onNext(KeepAliveRequest.newBuilder().addAllSessionIds(ids).setSequence(seq).build());
        // A node that cannot reach a leader may sit on the request: give up on it in time and
        // try the next node, rather than wait for it while the holders' deadlines run out.
        StreamObserver<KeepAliveRequest> sentOn = stream;
        timers.schedule(() -> abandonIfUnanswered(seq, sentOn), Math.min(roundTimeoutNanos, interval));
      } catch (RuntimeException e) {
        log.debug("keep-alive send failed", e);
        stream = null;
        streamResponses = null;
      }
      nextTick = timers.schedule(this::round, interval);
    }
  }

  private void abandonIfUnanswered(long seq, StreamObserver<KeepAliveRequest> sentOn) {
    if (!sentAtBySequence.containsKey(seq)) {
      return;
    }
    synchronized (streamLock) {
      if (stream != sentOn) {
        return; // that stream is already gone
      }
      log.debug("keep-alive round {} unanswered after {} ms; switching node", seq, roundTimeoutNanos / 1_000_000);
      try {
        sentOn.onError(new java.util.concurrent.TimeoutException("keep-alive unanswered"));
      } catch (RuntimeException e) {
        log.debug("cancelling keep-alive stream", e);
      }
    }
  }

  private final class Responses implements StreamObserver<KeepAliveResponse> {
    @Override
    public void onNext(KeepAliveResponse response) {
      Long sentAt = sentAtBySequence.remove(response.getSequence());
      if (sentAt == null) {
        return;
      }
      // Older rounds still unanswered will not be: this stream answers in order.
      sentAtBySequence.keySet().removeIf(seq -> seq < response.getSequence());
      String answeredBy = response.getClusterId();
      if (!answeredBy.isEmpty()) {
        // Those of another cluster end here, and are no longer among all() below.
        endSessionsOfAnotherCluster(answeredBy);
      }
      // Tenures an operator revoked end before the renewals this round answers are settled.
      for (int i = 0; i < response.getRevokedCount(); i++) {
        onRevoked.accept(response.getRevoked(i));
      }
      for (Session s : all()) {
        if (response.getAliveList().contains(s.id)) {
          if (sentAt - s.confirmedSentAt > 0) {
            s.confirmedSentAt = sentAt;
          }
          settle(s, true);
        } else if (response.getGoneList().contains(s.id)) {
          end(s, EXPIRED);
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      streamFailed(this, t);
    }

    @Override
    public void onCompleted() {
      streamFailed(this, null);
    }
  }

  /**
   * Ends every session that belongs to a cluster other than {@code answeredBy}: another cluster
   * answers at these addresses (restored from a backup), and its "alive" is about sessions of its
   * own history, not ours. With each session every tenure on it ends; new ones are made on the
   * new cluster. A session that knows no identity yet takes this one, unless the process was
   * answered by another before (then it may be of that one, and ends too).
   */
  private void endSessionsOfAnotherCluster(String answeredBy) {
    String before = clusterId;
    clusterId = answeredBy;
    List<Session> ofAnother = new ArrayList<>();
    for (Session s : all()) {
      if (!s.isGranted()) {
        continue; // its grant's answer tells which cluster it is of
      }
      String its = s.clusterId != null ? s.clusterId : before;
      if (its == null || its.equals(answeredBy)) {
        s.clusterId = answeredBy;
      } else {
        ofAnother.add(s);
      }
    }
    if (ofAnother.isEmpty()) {
      return;
    }
    String was = ofAnother.get(0).clusterId != null ? ofAnother.get(0).clusterId : before;
    log.warn(
        "the core at {} is another cluster now (identity {}, was {}: restored from a backup?); ending"
            + " {} session(s) of this process and the leases held on them",
        client.endpoints(), answeredBy, was, ofAnother.size());
    LeaseLost why =
        new LeaseLost(
            LeaseLost.Kind.INCONSISTENT,
            "the core is another cluster now (identity " + answeredBy + ", was " + was
                + "): restored from a backup, it may not know this tenure");
    for (Session s : ofAnother) {
      end(s, why);
    }
  }

  private void streamFailed(Responses which, Throwable t) {
    synchronized (streamLock) {
      if (which != streamResponses) {
        return; // an older stream, already replaced
      }
      stream = null;
      streamResponses = null;
    }
    sentAtBySequence.clear();
    if (!closed) {
      log.debug("keep-alive stream ended ({}); reconnecting on the next round", t == null ? "completed" : t.toString());
      client.failOver();
      LeaseStoreUnavailableException failure =
          new LeaseStoreUnavailableException("keep-alive not confirmed: " + (t == null ? "stream closed" : t.getMessage()), t);
      for (Session s : all()) {
        s.nextRound.getAndSet(new CompletableFuture<>()).completeExceptionally(failure);
      }
    }
  }

  private static void settle(Session s, boolean alive) {
    s.nextRound.getAndSet(new CompletableFuture<>()).complete(alive);
  }

  private static final LeaseLost EXPIRED =
      new LeaseLost(LeaseLost.Kind.EXPIRED, "the core expired this process's session");

  private void end(Session s, LeaseLost why) {
    if (s.ended) {
      return;
    }
    s.ended = true;
    s.endedBecause = why;
    byTtl.remove(s.ttlMillis, s);
    retired.remove(s);
    log.info("session {} ended ({}); its leases are lost", s.id, why.detail());
    settle(s, false);
    onSessionEnded.accept(s.id, why);
  }

  /** {@return the ids of the sessions granted and not ended, retired ones still kept included} */
  List<Long> liveIds() {
    List<Long> ids = new ArrayList<>();
    for (Session s : all()) {
      if (s.isGranted() && !s.ended) {
        ids.add(s.id);
      }
    }
    return ids;
  }

  /** The sessions in use and the retired ones still kept; a round's worth, not a hot path. */
  private List<Session> all() {
    List<Session> all = new ArrayList<>(byTtl.values());
    all.addAll(retired);
    return all;
  }

  /** The core said this session is gone (a call named it unknown). */
  void ended(Session s) {
    end(s, EXPIRED);
  }

  /**
   * Revokes every live session, so that the core forgets them now rather than one TTL later;
   * waits at most {@code atMost} for the answers. Best effort: a session not revoked expires.
   */
  void revokeAll(Duration atMost) {
    List<CompletableFuture<RevokeResponse>> revokes = new ArrayList<>();
    for (Session s : all()) {
      if (s.isGranted() && !s.ended) {
        // holder_closing: the core deletes the keys at once (an operator's revoke would let the
        // session expire first, so that its holders stop before anyone else gets their leases).
        RevokeRequest revoke =
            RevokeRequest.newBuilder().setCall(client.newCall()).setSessionId(s.id).setHolderClosing(true).build();
        revokes.add(client.<RevokeResponse>call((stub, out) -> stub.revoke(revoke, out)));
      }
    }
    try {
      CompletableFuture.allOf(revokes.toArray(CompletableFuture[]::new))
          .get(atMost.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      log.debug("sessions not revoked on close (they expire after their TTL): {}", e.toString());
    }
  }

  @Override
  public void close() {
    synchronized (streamLock) {
      closed = true;
      if (nextTick != null) {
        nextTick.cancel();
      }
      if (stream != null) {
        try {
          stream.onCompleted();
        } catch (RuntimeException e) {
          log.debug("closing keep-alive stream", e);
        }
      }
    }
  }
}
