package io.leasehold.client;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokedTenure;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.Failures;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;

/**
 * The lease store SPI on the core: a named lease is a key attached to this backend's session for
 * the lease's TTL. Acquire is a compare-and-set on the key's absence; renewal is the session's
 * shared keep-alive, whose replies also list the tenures of the session an operator revoked (each
 * ends at once here); confirming a tenure (acquire() while holding) reads its key; release deletes
 * the key only if it is still this tenure, or ends the tombstone of this tenure if it was revoked.
 *
 * <p><b>Keys nobody believes in.</b> An acquire whose outcome stays unknown, one answered after its
 * holder stopped waiting, and a release the core did not confirm may leave a key that no holder
 * believes it holds; the session it is on is then {@linkplain Sessions#retire retired}, kept alive
 * only while pinned by the tenures the engine believes in on it ({@link #held}) and by acquires in
 * flight, so the key expires with it. A tenure leaves {@code held}, and unpins, as soon as the
 * engine releases it (before the core confirms: the engine no longer believes in it) or the core
 * reports it gone. {@link #abandon} ends such a key at once when the core can be reached.
 */
final class CoreLeaseStore implements LeaseStore {

  /** Where the core keeps keys attached to a tenure: {@code <prefix><lease name>/<key>}. */
  static final String ATTACHED_PREFIX = "/_leasehold/attached/";

  private final CoreClient client;
  private final Sessions sessions;
  private final LeaseWatch watch;
  /** The tenures this process holds, by fencing token. */
  private final Map<Long, Held> held = new ConcurrentHashMap<>();
  /**
   * Tenures the core reported revoked, by token, with their session's id, until their holder's
   * release (which ends the tombstone that blocks the name) succeeds or the session ends.
   */
  private final Map<Long, Long> revokedTenures = new ConcurrentHashMap<>();
  /** Releases of revoked tenures that failed: sent again when a keep-alive lists the tenure. */
  private final Map<Long, Tenure> unreleased = new ConcurrentHashMap<>();

  /** A tenure this process holds: its session, holder and lease. */
  record Held(Sessions.Session session, HolderId holder, String leaseName) {}

  CoreLeaseStore(CoreClient client, Sessions sessions, LeaseWatch watch) {
    this.client = client;
    this.sessions = sessions;
    this.watch = watch;
  }

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    // The engine stops waiting after request.timeout(): so does the client, rather than retry on
    // other nodes and make a grant that nobody would know of.
    long deadline = System.nanoTime() + request.timeout().toNanos();
    return sessions.forTtl(request.ttl()).thenCompose(s -> acquireIn(s, request, deadline, true));
  }

  /** Sends the acquire on {@code session}, pinned while in flight; a grant's tenure pins it then. */
  private CompletableFuture<AcquireResult> acquireIn(
      Sessions.Session session, AcquireRequest request, long deadline, boolean mayRegrant) {
    // The key lives as long as the session: from the send time of its latest confirmed
    // keep-alive, read before the request goes out.
    long validFrom = session.confirmedSentAt;
    sessions.pin(session);
    io.leasehold.core.proto.AcquireRequest call =
        io.leasehold.core.proto.AcquireRequest.newBuilder()
            .setCall(client.newCall())
            .setName(request.leaseName())
            .setHolder(request.holder().toString())
            .setRequestId(request.requestId())
            .setSessionId(session.id)
            .build();
    watch.ensureStarted();
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      sessions.unpin(session);
      return CompletableFuture.failedFuture(
          new LeaseTimeoutException(
              "the acquire of '" + request.leaseName() + "' was not sent: its holder stopped"
                  + " waiting for it", null));
    }
    return client
        .batched(BatchOp.newBuilder().setAcquire(call).build(), AcquireResponse.parser(), Duration.ofNanos(left))
        .handle(
            (response, error) -> {
              if (error != null) {
                sessions.unpin(session);
                if (!CoreClient.isSessionNotFound(error) && !isRefusal(error)) {
                  // Outcome unknown: a key may exist that nobody will believe in.
                  sessions.retire(session);
                }
                if (mayRegrant && CoreClient.isSessionNotFound(error)) {
                  // The session ended under us: a new one, and one more try.
                  sessions.ended(session);
                  return sessions
                      .forTtl(request.ttl())
                      .thenCompose(s -> acquireIn(s, request, deadline, false));
                }
                return CompletableFuture.<AcquireResult>failedFuture(unwrap(error));
              }
              if (!response.getAcquired()) {
                sessions.unpin(session);
                return CompletableFuture.<AcquireResult>completedFuture(
                    new AcquireResult.HeldElsewhere(response.getHolder()));
              }
              // Registered (and its session pinned) before the engine sees the grant, so that
              // the session is kept alive from the moment the engine believes in the tenure.
              track(response.getToken(), new Held(session, request.holder(), request.leaseName()));
              if (System.nanoTime() - deadline > 0) {
                // Its holder has probably given up on it: should the engine's release of it be
                // lost, the session must not keep it alive.
                sessions.retire(session);
              }
              watch.watchFrom(response.getToken());
              return CompletableFuture.<AcquireResult>completedFuture(
                  new AcquireResult.Acquired(response.getToken(), validFrom));
            })
        .thenCompose(f -> f);
  }

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    Held h = held.get(tenure.token());
    Sessions.Session session = h == null ? null : h.session();
    if (session == null || session.ended) {
      held.remove(tenure.token());
      LeaseLost why = session == null ? null : session.endedBecause;
      return CompletableFuture.completedFuture(
          new RenewResult.Lost(why != null ? why : new LeaseLost(LeaseLost.Kind.EXPIRED, "the core's session for this lease ended")));
    }
    // A keep-alive the leader confirmed within the last interval answers for this renewal. Its
    // reply listed the session's revoked tenures, which ended here at once; one revoked since is
    // kept from everyone else by its tombstone until this holder releases it or the session ends.
    if (session.confirmedSince(sentAtNanos - session.intervalNanos)) {
      return CompletableFuture.completedFuture(new RenewResult.Renewed(session.confirmedSentAt));
    }
    return sessions
        .confirm(session)
        .thenApply(
            alive -> {
              if (!alive) {
                held.remove(tenure.token());
                LeaseLost why = session.endedBecause;
                return new RenewResult.Lost(
                    why != null ? why : new LeaseLost(LeaseLost.Kind.EXPIRED, "the core's session for this lease expired"));
              }
              if (!held.containsKey(tenure.token())) {
                return revokedAnswer(tenure); // the round's reply listed it as revoked
              }
              return new RenewResult.Renewed(session.confirmedSentAt);
            });
  }

  /**
   * Reads the tenure's key (a linearizable read through the leader) before renewing it: the
   * keep-alive that answers a renewal may have been sent before an operator's delete, and a watch
   * may be silent, so only the key itself confirms the tenure as of now.
   */
  @Override
  public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    String key = LeaseWatch.LEASE_PREFIX + tenure.leaseName();
    GetRequest get = GetRequest.newBuilder().setKey(key).build();
    return client
        .<GetResponse>call((stub, out) -> stub.get(get, out))
        .thenCompose(
            current -> {
              Held h = held.get(tenure.token());
              // The key must also be on the session this process renews for it: a key on another
              // session lives and dies with that one, which nothing here keeps alive.
              boolean ours =
                  current.getKvsCount() == 1
                      && current.getKvs(0).getCreateRevision() == tenure.token()
                      && (h == null || current.getKvs(0).getSessionId() == h.session().id)
                      && current.getKvs(0).getValue().toStringUtf8().equals(tenure.holder().toString());
              if (!ours) {
                held.remove(tenure.token());
                return CompletableFuture.<RenewResult>completedFuture(revokedAnswer(tenure));
              }
              return renew(tenure, sentAtNanos);
            });
  }

  private static RenewResult revokedAnswer(Tenure tenure) {
    return new RenewResult.Lost(
        new LeaseLost(
            LeaseLost.Kind.REVOKED,
            "the core no longer has tenure " + tenure.token() + " of lease '" + tenure.leaseName()
                + "' (an operator revoked it, or its session ended)"));
  }

  /**
   * A keep-alive reply listed a tenure of ours that an operator revoked: reports it if this
   * process still holds it; resends a release of it that failed, since its tombstone blocks the
   * name until then.
   */
  void revoked(RevokedTenure revoked, BiConsumer<Long, Held> lost) {
    long token = revoked.getToken();
    Held h = held.get(token);
    if (h != null && h.session().id == revoked.getSessionId() && held.remove(token, h)) {
      sessions.unpin(h.session());
      revokedTenures.put(token, h.session().id);
      lost.accept(token, h);
      return;
    }
    Tenure failed = unreleased.remove(token);
    if (failed != null) {
      release(failed);
    }
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    ReleaseRequest call =
        ReleaseRequest.newBuilder()
            .setCall(client.newCall())
            .setName(tenure.leaseName())
            .setHolder(tenure.holder().toString())
            .setToken(tenure.token())
            .build();
    // The engine asks to release only a tenure it no longer believes in: stop keeping its
    // session alive for it now, whether or not this call gets through.
    Held h = drop(tenure.token());
    return client
        .batched(BatchOp.newBuilder().setRelease(call).build(), ReleaseResponse.parser())
        .handle(
            (response, error) -> {
              if (error != null) {
                if (revokedTenures.containsKey(tenure.token())) {
                  unreleased.put(tenure.token(), tenure);
                }
                if (h != null) {
                  sessions.retire(h.session()); // the key may outlive the release: let it lapse
                }
                throw new CompletionException(unwrap(error));
              }
              revokedTenures.remove(tenure.token());
              unreleased.remove(tenure.token());
              return null;
            });
  }

  @Override
  public boolean supportsAttach() {
    return true;
  }

  /** A put conditional on the tenure, in one log entry: the core refuses it once the tenure ended. */
  @Override
  public CompletableFuture<Boolean> attach(Tenure tenure, String key, String value) {
    io.leasehold.core.proto.PutRequest put =
        io.leasehold.core.proto.PutRequest.newBuilder()
            .setCall(client.newCall())
            .setKey(key)
            .setValue(com.google.protobuf.ByteString.copyFromUtf8(value))
            .setTenure(
                io.leasehold.core.proto.Tenure.newBuilder()
                    .setName(tenure.leaseName())
                    .setHolder(tenure.holder().toString())
                    .setToken(tenure.token()))
            .build();
    return client
        .batched(BatchOp.newBuilder().setPut(put).build(), io.leasehold.core.proto.PutResponse.parser())
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new CompletionException(unwrap(error));
              }
              return !response.getTenureEnded();
            });
  }

  /**
   * Ends the record {@code request} made, if the core has one: found by the holder and request id
   * stored with the key, released on its create revision. A later acquire of the holder (a greater
   * request id) or another holder's record never matches.
   */
  @Override
  public CompletableFuture<Void> abandon(AcquireRequest request) {
    String key = LeaseWatch.LEASE_PREFIX + request.leaseName();
    String holder = request.holder().toString();
    // One try's worth of patience, as for the acquire itself: the engine does not wait longer.
    return client
        .<GetResponse>call(
            (stub, out) -> stub.get(GetRequest.newBuilder().setKey(key).build(), out), request.timeout())
        .thenCompose(
            found -> {
              for (KeyValue kv : found.getKvsList()) {
                if (kv.getKey().equals(key)
                    && kv.getLeaseRequestId() == request.requestId()
                    && kv.getValue().toStringUtf8().equals(holder)) {
                  return release(
                      new Tenure(
                          request.leaseName(),
                          request.holder(),
                          request.requestId(),
                          kv.getCreateRevision(),
                          request.ttl()));
                }
              }
              return CompletableFuture.<Void>completedFuture(null);
            });
  }

  /** Records a tenure; its session stays pinned by it (the pin of the acquire that made it). */
  private void track(long token, Held h) {
    Held before = held.put(token, h);
    if (before != null) {
      sessions.unpin(before.session()); // a retry got the same tenure: one pin for it
    }
  }

  /** Forgets a tenure and unpins its session; returns what it was, if held. */
  private Held drop(long token) {
    Held h = held.remove(token);
    if (h != null) {
      sessions.unpin(h.session());
    }
    return h;
  }

  /** A definite refusal (bad argument, no permission): nothing was written. */
  private static boolean isRefusal(Throwable error) {
    return unwrap(error) instanceof io.leasehold.LeaseException le
        && le.code() == io.leasehold.LeaseException.Code.PROTOCOL;
  }

  /** Every tenure of a session that ended is gone: reports and forgets each. */
  void sessionEnded(long sessionId, BiConsumer<Long, Held> lost) {
    // The core dropped the session's tombstones with it.
    revokedTenures.forEach(
        (token, session) -> {
          if (session == sessionId && revokedTenures.remove(token, session)) {
            unreleased.remove(token);
          }
        });
    held.forEach(
        (token, h) -> {
          if (h.session().id == sessionId && held.remove(token, h)) {
            sessions.unpin(h.session());
            lost.accept(token, h);
          }
        });
  }

  /** A watch reported this tenure gone (revoked, or its session expired). */
  void forget(long token) {
    Held h = drop(token);
    if (h != null) {
      revokedTenures.put(token, h.session().id);
    }
  }

  /**
   * After a gap in the watch, one page of the lease keys: reports and forgets each held tenure
   * that the page shows gone. The page judges only tenures whose key is in its key range and that
   * existed by its revision (token ≤ revision); a tenure made after the page was read is the
   * watch's to report (see {@link LeaseWatch}).
   */
  void missingFrom(PrefixPages.Page page, BiConsumer<Long, Held> lost) {
    Map<Long, String> present = new HashMap<>();
    for (KeyValue kv : page.kvs()) {
      present.put(kv.getCreateRevision(), kv.getKey());
    }
    held.forEach(
        (token, h) -> {
          String key = LeaseWatch.LEASE_PREFIX + h.leaseName();
          if (token > page.revision() || !page.covers(key)) {
            return; // this page cannot tell
          }
          if (!key.equals(present.get(token)) && held.remove(token, h)) {
            sessions.unpin(h.session());
            lost.accept(token, h);
          }
        });
  }

  private static Throwable unwrap(Throwable t) {
    return Failures.unwrap(t);
  }
}
