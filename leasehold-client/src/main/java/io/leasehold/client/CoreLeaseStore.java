package io.leasehold.client;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokedTenure;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
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
 */
final class CoreLeaseStore implements LeaseStore {

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
    return sessions.forTtl(request.ttl()).thenCompose(s -> acquireIn(s, request, true));
  }

  private CompletableFuture<AcquireResult> acquireIn(
      Sessions.Session session, AcquireRequest request, boolean mayRegrant) {
    // The key lives as long as the session: from the send time of its latest confirmed
    // keep-alive, read before the request goes out.
    long validFrom = session.confirmedSentAt;
    io.leasehold.core.proto.AcquireRequest call =
        io.leasehold.core.proto.AcquireRequest.newBuilder()
            .setCall(client.newCall())
            .setName(request.leaseName())
            .setHolder(request.holder().toString())
            .setRequestId(request.requestId())
            .setSessionId(session.id)
            .build();
    watch.ensureStarted();
    return client
        .<AcquireResponse>call((stub, out) -> stub.acquire(call, out))
        .handle(
            (response, error) -> {
              if (error != null) {
                if (mayRegrant && CoreClient.isSessionNotFound(error)) {
                  // The session ended under us: a new one, and one more try.
                  sessions.ended(session);
                  return sessions
                      .forTtl(request.ttl())
                      .thenCompose(s -> acquireIn(s, request, false));
                }
                return CompletableFuture.<AcquireResult>failedFuture(unwrap(error));
              }
              if (!response.getAcquired()) {
                return CompletableFuture.<AcquireResult>completedFuture(
                    new AcquireResult.HeldElsewhere(response.getHolder()));
              }
              held.put(response.getToken(), new Held(session, request.holder(), request.leaseName()));
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
      return CompletableFuture.completedFuture(
          new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.EXPIRED, "the core's session for this lease ended")));
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
                return new RenewResult.Lost(
                    new LeaseLost(LeaseLost.Kind.EXPIRED, "the core's session for this lease expired"));
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
              boolean ours =
                  current.getKvsCount() == 1
                      && current.getKvs(0).getCreateRevision() == tenure.token()
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
    return client
        .<ReleaseResponse>call((stub, out) -> stub.release(call, out))
        .handle(
            (response, error) -> {
              if (error != null) {
                if (revokedTenures.containsKey(tenure.token())) {
                  unreleased.put(tenure.token(), tenure);
                }
                throw error instanceof CompletionException c ? c : new CompletionException(error);
              }
              revokedTenures.remove(tenure.token());
              unreleased.remove(tenure.token());
              held.remove(tenure.token());
              return null;
            });
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
            lost.accept(token, h);
          }
        });
  }

  /** A watch reported this tenure gone (revoked, or its session expired). */
  void forget(long token) {
    Held h = held.remove(token);
    if (h != null) {
      revokedTenures.put(token, h.session().id);
    }
  }

  /** After a gap in the watch: reports and forgets each tenure whose key is not in {@code current}. */
  void missingFrom(GetResponse current, BiConsumer<Long, Held> lost) {
    Map<Long, String> present = new HashMap<>();
    for (KeyValue kv : current.getKvsList()) {
      present.put(kv.getCreateRevision(), kv.getKey());
    }
    held.forEach(
        (token, h) -> {
          if (!(LeaseWatch.LEASE_PREFIX + h.leaseName()).equals(present.get(token)) && held.remove(token, h)) {
            lost.accept(token, h);
          }
        });
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }
}
