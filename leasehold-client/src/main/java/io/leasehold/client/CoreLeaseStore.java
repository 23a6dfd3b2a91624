package io.leasehold.client;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
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
 * shared keep-alive; release deletes the key only if it is still this tenure.
 */
final class CoreLeaseStore implements LeaseStore {

  private final CoreClient client;
  private final Sessions sessions;
  private final LeaseWatch watch;
  /** The tenures this process holds, by fencing token. */
  private final Map<Long, Held> held = new ConcurrentHashMap<>();

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
        .batched(BatchOp.newBuilder().setAcquire(call).build(), AcquireResponse.parser())
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
    // A keep-alive the leader confirmed within the last interval answers for this renewal.
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
              return new RenewResult.Renewed(session.confirmedSentAt);
            });
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
        .batched(BatchOp.newBuilder().setRelease(call).build(), ReleaseResponse.parser())
        .thenApply(
            response -> {
              held.remove(tenure.token());
              return null;
            });
  }

  /** Every tenure of a session that ended is gone: reports and forgets each. */
  void sessionEnded(long sessionId, BiConsumer<Long, Held> lost) {
    held.forEach(
        (token, h) -> {
          if (h.session().id == sessionId && held.remove(token, h)) {
            lost.accept(token, h);
          }
        });
  }

  /** A watch reported this tenure gone. */
  void forget(long token) {
    held.remove(token);
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
