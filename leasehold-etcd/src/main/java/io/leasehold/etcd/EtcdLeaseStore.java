package io.leasehold.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.leasehold.HolderId;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Scheduler;
import io.leasehold.spi.Tenure;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LeaseStore} on etcd. A lease record is the key {@code <namespace>/leases/<name>}
 * whose value is {@code <owner>#<incarnation>\n<request id>}, attached to the backend's session
 * lease for the tenure's TTL; its create revision is the fencing token.
 *
 * <ul>
 *   <li>acquire: one transaction: if the key's create revision is 0, put it with the session
 *       lease; else read it. A key of this holder with the same request id is a retried acquire
 *       (the same tenure); with a smaller one, a tenure this holder gave up, which is deleted (on
 *       its create revision) and acquired afresh.</li>
 *   <li>renew: no traffic of its own: answered from the session's last keep-alive.</li>
 *   <li>release: delete the key if its create revision and value are still this tenure's.</li>
 *   <li>abandon: read the key; if it is the record of the abandoned request (holder and request
 *       id), delete it on its create revision.</li>
 *   <li>loss: a watch on the namespace reports a deleted or overwritten key of a held tenure at
 *       once; a keep-alive that finds the session lease gone ends every tenure attached to it.</li>
 * </ul>
 */
final class EtcdLeaseStore implements LeaseStore, Session.DeathListener {

  private static final Logger log = LoggerFactory.getLogger(EtcdLeaseStore.class);

  private final String uri;
  private final Client client;
  private final KV kv;
  private final Watch watchClient;
  private final LeaseRuntime runtime;
  private final OpenLeases leases;
  private final String keyPrefix;
  private final ByteSequence prefix;
  private final Map<Long, Session> sessions = new ConcurrentHashMap<>();
  /** Tenures this backend holds, by lease name (one key per name). */
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final Object watchLock = new Object();
  private CompletableFuture<Void> watchReady; // guarded by watchLock
  private Watch.Watcher watcher; // guarded by watchLock
  private volatile boolean closed;

  EtcdLeaseStore(String uri, Client client, String namespace, LeaseRuntime runtime, OpenLeases leases) {
    this.uri = uri;
    this.client = client;
    this.kv = client.getKVClient();
    this.watchClient = client.getWatchClient();
    this.runtime = runtime;
    this.leases = leases;
    this.keyPrefix = namespace + "/leases/";
    this.prefix = bytes(keyPrefix);
  }

  /** The etcd TTL for a lease TTL: whole seconds, rounded up (the store keeps it a bit longer). */
  static long ttlSeconds(Duration ttl) {
    long seconds = ttl.getSeconds();
    return ttl.getNano() > 0 ? seconds + 1 : seconds;
  }

  /**
   * Makes sure a session for {@code ttl} exists and keeps alive at least every heartbeat, and
   * starts granting its etcd lease if it has none, so that the first acquire finds it ready.
   */
  CompletableFuture<Void> register(Duration ttl, Duration heartbeat, Duration timeout) {
    Session session =
        sessions.computeIfAbsent(
            ttlSeconds(ttl),
            s -> new Session(s, heartbeat, timeout, client.getLeaseClient(), runtime, this));
    session.useSettings(heartbeat, timeout);
    // Failures are left to the acquire, which asks again.
    return session.grant(TimeUnit.SECONDS.toNanos(session.ttlSeconds())).thenRun(() -> {});
  }

  String key(String leaseName) {
    return keyPrefix + leaseName;
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire.

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    Session session = sessions.get(ttlSeconds(request.ttl()));
    if (session == null) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("no session for TTL " + request.ttl()));
    }
    long timeout = TimeUnit.SECONDS.toNanos(session.ttlSeconds());
    InFlight inFlight = new InFlight(session);
    // The holder stops waiting after request.timeout(): from then on the outcome is unknown to
    // it, so the grant the transaction is on may carry a key nobody believes in.
    Scheduler.Cancellable gaveUp =
        runtime.timers().schedule(() -> inFlight.end(true), request.timeout().toNanos());
    // Both are usually ready already: the watch starts when the backend opens, the grant is kept.
    return ensureWatch()
        .thenCombine(session.grant(timeout), (ready, grant) -> grant)
        .thenCompose(grant -> acquireWith(request, session, grant, true, true, inFlight))
        .whenComplete(
            (answer, error) -> {
              gaveUp.cancel();
              // A grant's tenure pinned its grant before this. A failure other than a refusal
              // leaves the outcome unknown.
              inFlight.end(error != null && !(Session.unwrap(error) instanceof IllegalStateException));
            });
  }

  /**
   * One acquire while its transaction is in flight: it pins the grant the transaction is on, so
   * that a retired grant stays alive for it, until the answer or until its holder stops waiting.
   */
  private static final class InFlight {
    private final Session session;
    private Session.Grant on; // guarded by this
    private boolean ended; // guarded by this

    InFlight(Session session) {
      this.session = session;
    }

    /** The transaction goes out on {@code grant}. */
    synchronized void on(Session.Grant grant) {
      if (ended || on == grant) {
        return;
      }
      grant.pin();
      if (on != null) {
        on.unpin();
      }
      on = grant;
    }

    /** The answer came, or the holder stopped waiting; with {@code doubt}, retires the grant. */
    void end(boolean doubt) {
      Session.Grant g;
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
        g = on;
      }
      if (g != null) {
        g.unpin();
        if (doubt) {
          session.retire(g);
        }
      }
    }
  }

  private CompletableFuture<AcquireResult> acquireWith(
      AcquireRequest request,
      Session session,
      Session.Grant grant,
      boolean mayReplace,
      boolean mayRegrant,
      InFlight inFlight) {
    inFlight.on(grant);
    ByteSequence key = bytes(key(request.leaseName()));
    ByteSequence value = bytes(Record.encode(request.holder(), request.requestId()));
    return kv.txn()
        .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
        .Then(
            Op.put(key, value, PutOption.builder().withLeaseId(grant.id).build()),
            Op.get(key, GetOption.DEFAULT))
        .Else(Op.get(key, GetOption.DEFAULT))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                if (Session.isLeaseNotFound(error)) {
                  session.markDead(grant, "etcd lease " + Long.toHexString(grant.id)
                      + " no longer exists in etcd (a put with it was refused)");
                  if (mayRegrant) {
                    // etcd refused the whole transaction, so nothing was written: a fresh
                    // session lease and one more try answer this acquire definitely.
                    return session
                        .grant(TimeUnit.SECONDS.toNanos(session.ttlSeconds()))
                        .thenCompose(g -> acquireWith(request, session, g, mayReplace, false, inFlight));
                  }
                }
                return CompletableFuture.<AcquireResult>failedFuture(
                    Session.unavailable(
                        "the acquire transaction for '" + request.leaseName() + "' failed", error));
              }
              return answer(request, session, grant, response, mayReplace, mayRegrant, inFlight);
            })
        .thenCompose(f -> f);
  }

  private CompletableFuture<AcquireResult> answer(
      AcquireRequest request,
      Session session,
      Session.Grant grant,
      TxnResponse response,
      boolean mayReplace,
      boolean mayRegrant,
      InFlight inFlight) {
    KeyValue record = firstKv(response);
    if (record == null) {
      return CompletableFuture.failedFuture(new LeaseException(LeaseException.Code.PROTOCOL,
          "etcd answered the acquire transaction for '" + request.leaseName()
              + "' without the key", null));
    }
    Record r = Record.parse(record.getValue().toString(StandardCharsets.UTF_8));
    if (response.isSucceeded()) {
      return CompletableFuture.completedFuture(granted(request, grant, record));
    }
    if (r == null || !r.holder().equals(request.holder())) {
      String holder = r != null ? r.holder().toString() : "(unreadable record)";
      return CompletableFuture.completedFuture(new AcquireResult.HeldElsewhere(holder));
    }
    if (r.requestId() == request.requestId() && record.getLease() == grant.id) {
      return CompletableFuture.completedFuture(granted(request, grant, record)); // a retry
    }
    if (r.requestId() > request.requestId() || !mayReplace) {
      return CompletableFuture.completedFuture(
          new AcquireResult.HeldElsewhere(request.holder().toString()));
    }
    // A tenure this holder gave up on: end it on its create revision, then acquire afresh.
    return deleteIf(record.getKey(), record.getCreateRevision(), record.getValue())
        .thenCompose(ignored -> acquireWith(request, session, grant, false, mayRegrant, inFlight));
  }

  private AcquireResult granted(AcquireRequest request, Session.Grant grant, KeyValue record) {
    long token = record.getCreateRevision();
    // Pinned before the engine sees the grant, so that a retired grant is kept alive from the
    // moment the engine believes in the tenure.
    grant.pin();
    Held before =
        held.put(request.leaseName(), new Held(request.holder(), token, grant, runtime.ticker().read()));
    if (before != null) {
      before.grant.unpin();
    }
    if (grant.dead != null) {
      // The session died between the put and this answer; its death notice may have missed us.
      report(request.leaseName(), request.holder(), token,
          new LeaseLost(LeaseLost.Kind.REVOKED, grant.dead));
    }
    return new AcquireResult.Acquired(token, grant.lastOkSentAt);
  }

  // ---------------------------------------------------------------------------------------------
  // Renew and release.

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    Held h = held.get(tenure.leaseName());
    if (h == null || h.token != tenure.token() || !h.holder.equals(tenure.holder())) {
      return CompletableFuture.completedFuture(new RenewResult.Lost(new LeaseLost(
          LeaseLost.Kind.REVOKED,
          "etcd no longer holds tenure " + tenure.token() + " of '" + tenure.leaseName() + "'")));
    }
    Session.Grant g = h.grant;
    String dead = g.dead;
    if (dead != null) {
      return CompletableFuture.completedFuture(
          new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, dead)));
    }
    if (g.failures == 0) {
      return CompletableFuture.completedFuture(new RenewResult.Renewed(g.lastOkSentAt));
    }
    // Keep-alives are failing: answer with the next one's outcome, shared by every lease.
    Session session = sessions.get(ttlSeconds(tenure.ttl()));
    return session.nextKeepAlive(g).handle((sent, error) -> {
      if (g.dead != null) {
        return new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, g.dead));
      }
      if (error != null) {
        throw new java.util.concurrent.CompletionException(Session.unavailable(
            "the keep-alive of etcd lease " + Long.toHexString(g.id) + " failed " + g.failures
                + " time(s) since its last success", error));
      }
      return new RenewResult.Renewed(sent);
    });
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    ByteSequence key = bytes(key(tenure.leaseName()));
    ByteSequence value = bytes(Record.encode(tenure.holder(), tenure.requestId()));
    // The engine releases only a tenure it no longer believes in: stop keeping its grant alive
    // for it now, whether or not the delete gets through.
    Held h = forget(tenure.leaseName(), tenure.token());
    return deleteIf(key, tenure.token(), value)
        .whenComplete(
            (ok, error) -> {
              Session session = sessions.get(ttlSeconds(tenure.ttl()));
              if (error != null && h != null && session != null) {
                session.retire(h.grant); // the key may outlive the release: let the grant lapse
              }
            });
  }

  @Override
  public CompletableFuture<Void> abandon(AcquireRequest request) {
    ByteSequence key = bytes(key(request.leaseName()));
    return kv.get(key)
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(
                    Session.unavailable("reading " + key(request.leaseName()) + " failed", error));
              }
              return response;
            })
        .thenCompose(
            response -> {
              KeyValue record = response.getKvs().isEmpty() ? null : response.getKvs().get(0);
              Record r =
                  record == null ? null : Record.parse(record.getValue().toString(StandardCharsets.UTF_8));
              if (r == null
                  || !r.holder().equals(request.holder())
                  || r.requestId() != request.requestId()) {
                return CompletableFuture.<Void>completedFuture(null);
              }
              forget(request.leaseName(), record.getCreateRevision());
              return deleteIf(record.getKey(), record.getCreateRevision(), record.getValue());
            });
  }

  /** Deletes {@code key} only if it is still the record with that create revision and value. */
  private CompletableFuture<Void> deleteIf(ByteSequence key, long createRevision, ByteSequence value) {
    return kv.txn()
        .If(
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(createRevision)),
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(value)))
        .Then(Op.delete(key, DeleteOption.DEFAULT))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(
                    Session.unavailable("the conditional delete of " + key + " failed", error));
              }
              return null;
            });
  }

  /** Forgets the tenure with {@code token} of {@code leaseName}, if held, and unpins its grant. */
  private Held forget(String leaseName, long token) {
    Held h = held.get(leaseName);
    if (h != null && h.token == token && held.remove(leaseName, h)) {
      h.grant.unpin();
      return h;
    }
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // Losses the store reports.

  @Override
  public void grantDied(Session.Grant grant, String reason) {
    for (Map.Entry<String, Held> e : held.entrySet()) {
      Held h = e.getValue();
      if (h.grant == grant) {
        report(e.getKey(), h.holder, h.token, new LeaseLost(LeaseLost.Kind.REVOKED, reason));
      }
    }
  }

  /** Ends a tenure the store no longer has; the deadline's own verdict goes first if it passed. */
  private void report(String leaseName, HolderId holder, long token, LeaseLost reason) {
    forget(leaseName, token);
    Optional<ManagedLease> lease = leases.find(holder);
    if (lease.isPresent()) {
      lease.get().checkAlive(); // a deadline already passed is the truer reason
      lease.get().storeReportedLoss(token, reason);
    }
  }

  /**
   * Starts watching the namespace, if it is not watched yet: the first round trips to etcd.
   *
   * @return completes once the watch is set up, exceptionally if etcd could not be reached
   */
  CompletableFuture<Void> ensureWatch() {
    synchronized (watchLock) {
      if (watchReady != null && !watchReady.isCompletedExceptionally()) {
        return watchReady;
      }
      CompletableFuture<Void> ready = watchReady = new CompletableFuture<>();
      // Start the watch at a revision before any acquire of ours, so no event of ours is missed.
      kv.get(prefix, GetOption.builder().isPrefix(true).withCountOnly(true).build())
          .whenComplete(
              (response, error) -> {
                if (error != null) {
                  ready.completeExceptionally(
                      Session.unavailable("reading the etcd revision to watch from failed", error));
                  return;
                }
                startWatch(response.getHeader().getRevision() + 1);
                ready.complete(null);
              });
      return ready;
    }
  }

  private void startWatch(long fromRevision) {
    WatchOption option =
        WatchOption.builder().isPrefix(true).withPrevKV(true).withRevision(fromRevision).build();
    synchronized (watchLock) {
      if (closed) {
        return;
      }
      watcher = watchClient.watch(prefix, option, Watch.listener(
          this::onWatch,
          error -> log.debug("The watch on {} of {} failed: {}", keyPrefix, uri, error.toString()),
          this::onWatchEnded));
    }
  }

  private void onWatch(WatchResponse response) {
    for (WatchEvent event : response.getEvents()) {
      KeyValue now = event.getKeyValue();
      KeyValue before = event.getPrevKV();
      String name = now.getKey().toString(StandardCharsets.UTF_8).substring(keyPrefix.length());
      long revision = now.getModRevision();
      Record was = before != null && before.getCreateRevision() != 0
          ? Record.parse(before.getValue().toString(StandardCharsets.UTF_8)) : null;
      if (event.getEventType() == WatchEvent.EventType.DELETE) {
        LeaseLost reason = new LeaseLost(LeaseLost.Kind.REVOKED,
            "etcd deleted the key " + keyPrefix + name + " at revision " + revision
                + " (its etcd lease expired or was revoked, or someone deleted it)");
        if (was != null) {
          report(name, was.holder(), before.getCreateRevision(), reason);
        } else {
          Held h = held.get(name);
          if (h != null && h.token < revision) {
            report(name, h.holder, h.token, reason);
          }
        }
      } else if (event.getEventType() == WatchEvent.EventType.PUT) {
        if (was != null
            && (!before.getValue().equals(now.getValue()) || before.getLease() != now.getLease())) {
          Record is = Record.parse(now.getValue().toString(StandardCharsets.UTF_8));
          boolean otherHolder = is == null || !is.holder().equals(was.holder());
          report(name, was.holder(), before.getCreateRevision(), new LeaseLost(
              otherHolder ? LeaseLost.Kind.TAKEN_OVER : LeaseLost.Kind.INCONSISTENT,
              "someone overwrote the key " + keyPrefix + name + " at revision " + revision));
        }
        Held h = held.get(name);
        if (h != null && h.token < now.getCreateRevision()) {
          report(name, h.holder, h.token, new LeaseLost(LeaseLost.Kind.TAKEN_OVER,
              "the key " + keyPrefix + name + " was created anew at revision "
                  + now.getCreateRevision() + " for another tenure"));
        }
      }
    }
  }

  /** The watch ended for good (compaction, a halt error): restart it and re-check what we hold. */
  private void onWatchEnded() {
    synchronized (watchLock) {
      if (closed) {
        return;
      }
      watchReady = null;
    }
    log.warn("The watch on {} of {} ended; restarting it and re-checking the held leases",
        keyPrefix, uri);
    runtime.timers().schedule(this::recheck, TimeUnit.MILLISECONDS.toNanos(100));
  }

  private void recheck() {
    ensureWatch()
        .thenRun(() -> {
          for (Map.Entry<String, Held> e : held.entrySet()) {
            Held h = e.getValue();
            kv.get(bytes(key(e.getKey()))).thenAccept(r -> {
              if (r.getKvs().isEmpty() || r.getKvs().get(0).getCreateRevision() != h.token) {
                report(e.getKey(), h.holder, h.token, new LeaseLost(LeaseLost.Kind.REVOKED,
                    "etcd no longer has the key " + key(e.getKey()) + " of this tenure"));
              }
            });
          }
        })
        .exceptionally(error -> {
          if (!closed) {
            runtime.timers().schedule(this::recheck, TimeUnit.MILLISECONDS.toNanos(500));
          }
          return null;
        });
  }

  // ---------------------------------------------------------------------------------------------
  // Close.

  /**
   * Stops the sessions and the watch. With {@code revoke}, revokes the session leases (waiting
   * at most {@code wait}), so nothing this backend held outlives it; without, leaves them to
   * expire in etcd, as a crashed process would.
   */
  void close(boolean revoke, Duration wait) {
    synchronized (watchLock) {
      closed = true;
      if (watcher != null) {
        watcher.close();
      }
    }
    for (Session s : sessions.values()) {
      for (Session.Grant g : s.close()) {
        if (!revoke) {
          continue;
        }
        try {
          client.getLeaseClient().revoke(g.id).get(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Exception e) {
          log.debug("Could not revoke etcd lease {} on close; it expires within {} s: {}",
              Long.toHexString(g.id), s.ttlSeconds(), e.toString());
        }
      }
    }
  }

  private static KeyValue firstKv(TxnResponse response) {
    for (var get : response.getGetResponses()) {
      if (!get.getKvs().isEmpty()) {
        return get.getKvs().get(0);
      }
    }
    return null;
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  /** A tenure this backend holds; it pins its grant. */
  private record Held(HolderId holder, long token, Session.Grant grant, long since) {}

  /** The value of a lease key: who holds it, and for which acquire call. */
  record Record(HolderId holder, long requestId) {
    static String encode(HolderId holder, long requestId) {
      return holder + "\n" + requestId;
    }

    /** @return the record, or null if the value is not one of ours */
    static Record parse(String value) {
      int nl = value.lastIndexOf('\n');
      if (nl <= 0) {
        return null;
      }
      try {
        return new Record(
            HolderId.parse(value.substring(0, nl)), Long.parseLong(value.substring(nl + 1)));
      } catch (IllegalArgumentException e) {
        return null;
      }
    }
  }
}
