package io.leasehold.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.leasehold.HolderId;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseProtocolException;
import io.leasehold.Scheduler;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LeaseStore} on etcd. A lease record is the key {@code <namespace>/leases/<name>}
 * whose value is {@code <owner>#<incarnation>\n<request id>}, attached to the backend's session
 * lease for the tenure's TTL; its create revision is the fencing token. Beside it, written in the
 * same transaction and attached to the same etcd lease, the <em>guard</em> {@code
 * <namespace>/guards/<name>} with the same value: an {@code etcdctl del} of the record leaves the
 * guard, and the guard keeps the name from everyone else until its holder has stopped.
 *
 * <ul>
 *   <li>acquire: one transaction: if neither the record nor the guard exists, put both with the
 *       session lease; else read both. A record of this holder with the same request id is a
 *       retried acquire (the same tenure); with a smaller one (or only its guard left), a tenure
 *       this holder gave up, which is ended (on its create revision) and acquired afresh.</li>
 *   <li>renew: no traffic of its own: answered from the session's last keep-alive. Every
 *       heartbeat one request per session ({@code LeaseTimeToLive} with its attached keys) checks
 *       that the records of the tenures it holds still exist; one that does not is lost at once,
 *       even if the watch is silent.</li>
 *   <li>confirm (acquire() while holding): a linearizable read of the record, then renew.</li>
 *   <li>release: one transaction: delete record and guard if the record is still this tenure's,
 *       else delete the guard if it is (the holder of a revoked tenure says it stopped).</li>
 *   <li>abandon: read the record; if it is that of the abandoned request (holder and request
 *       id), end it on its create revision.</li>
 *   <li>loss: a watch on the namespace reports a deleted or overwritten key of a held tenure at
 *       once; a keep-alive that finds the session lease gone ends every tenure attached to it.</li>
 * </ul>
 */
final class EtcdLeaseStore implements LeaseStore, Session.DeathListener {

  private static final Logger log = LoggerFactory.getLogger(EtcdLeaseStore.class);

  private final String uri;
  /** Turns etcd's refusals (credentials, rights, TLS) into failures that say so. */
  private final EtcdAccess access;
  private final Client client;
  private final KV kv;
  private final Watch watchClient;
  private final LeaseRuntime runtime;
  private final OpenLeases leases;
  private final String keyPrefix;
  private final String guardPrefix;
  private final String attachedPrefix;
  private final ByteSequence prefix;
  private final Map<Long, Session> sessions = new ConcurrentHashMap<>();
  /** Tenures this backend holds, by lease name (one key per name). */
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final Object watchLock = new Object();
  /** Session leases whose held records are being checked now (see {@link #checkHeld}). */
  private final Set<Session.Grant> checkingGrants = ConcurrentHashMap.newKeySet();
  private CompletableFuture<Void> watchReady; // guarded by watchLock
  private Watch.Watcher watcher; // guarded by watchLock
  private volatile boolean closed;
  /** How often held records are checked: the shortest heartbeat of any lease; guarded by this. */
  private long checkIntervalNanos = Long.MAX_VALUE;
  private boolean checking; // guarded by this
  private volatile boolean watchSilenced;

  EtcdLeaseStore(
      String uri, Client client, String namespace, LeaseRuntime runtime, OpenLeases leases, EtcdAccess access) {
    this.uri = uri;
    this.access = access;
    this.client = client;
    this.kv = client.getKVClient();
    this.watchClient = client.getWatchClient();
    this.runtime = runtime;
    this.leases = leases;
    this.keyPrefix = namespace + "/leases/";
    this.guardPrefix = namespace + "/guards/";
    this.attachedPrefix = namespace + "/attached/";
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
    synchronized (this) {
      checkIntervalNanos = Math.min(checkIntervalNanos, heartbeat.toNanos());
    }
    // Failures are left to the acquire, which asks again.
    return session.grant(TimeUnit.SECONDS.toNanos(session.ttlSeconds())).thenRun(() -> {});
  }

  String key(String leaseName) {
    return keyPrefix + leaseName;
  }

  /** {@return the key of the guard that keeps {@code leaseName} blocked while its holder lives} */
  String guardKey(String leaseName) {
    return guardPrefix + leaseName;
  }

  /** {@return the prefix under which the keys attached to tenures of {@code leaseName} live} */
  String attachedPrefix(String leaseName) {
    return attachedPrefix + leaseName + "/";
  }

  // ---------------------------------------------------------------------------------------------
  // Attached keys and reads.

  @Override
  public boolean supportsAttach() {
    return true;
  }

  /**
   * One transaction: if the record is still exactly this tenure's (create revision and value),
   * puts {@code <namespace>/attached/<name>/<key>} on the tenure's own etcd lease, so it expires
   * with the tenure; else writes nothing. A release deletes the keys in its own transaction.
   */
  @Override
  public CompletableFuture<Boolean> attach(Tenure tenure, String key, String value) {
    Held h = held.get(tenure.leaseName());
    if (h == null || h.token != tenure.token()) {
      return CompletableFuture.completedFuture(false);
    }
    ByteSequence record = bytes(key(tenure.leaseName()));
    ByteSequence recordValue = bytes(Record.encode(tenure.holder(), tenure.requestId()));
    return kv.txn()
        .If(
            new Cmp(record, Cmp.Op.EQUAL, CmpTarget.createRevision(tenure.token())),
            new Cmp(record, Cmp.Op.EQUAL, CmpTarget.value(recordValue)))
        .Then(Op.put(bytes(attachedPrefix(tenure.leaseName()) + key), bytes(value),
            PutOption.builder().withLeaseId(h.grant.id).build()))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(
                    access.failure("the attach transaction for '" + tenure.leaseName() + "' failed", error));
              }
              return response.isSucceeded();
            });
  }

  /**
   * Reads the record and the attached keys in one transaction (one revision, linearizable). Only
   * keys written during the tenure count (mod revision after its create revision): a key left by
   * a tenure an operator deleted, not yet cleaned up, is not this tenure's.
   */
  CompletableFuture<io.leasehold.LeaseState> read(String leaseName) {
    String attached = attachedPrefix(leaseName);
    return kv.txn()
        .Then(
            Op.get(bytes(key(leaseName)), GetOption.DEFAULT),
            Op.get(bytes(attached), GetOption.builder().isPrefix(true).build()))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(
                    access.failure("reading lease '" + leaseName + "' failed", error));
              }
              KeyValue record = kvOf(response.getGetResponses(), 0);
              if (record == null) {
                return new io.leasehold.LeaseState(leaseName, Optional.empty(), Map.of());
              }
              Map<String, String> values = new HashMap<>();
              List<GetResponse> gets = response.getGetResponses();
              if (gets.size() > 1) {
                for (KeyValue kv : gets.get(1).getKvs()) {
                  String k = kv.getKey().toString(StandardCharsets.UTF_8).substring(attached.length());
                  if (kv.getModRevision() > record.getCreateRevision() && k.indexOf('/') < 0) {
                    values.put(k, kv.getValue().toString(StandardCharsets.UTF_8));
                  }
                }
              }
              return new io.leasehold.LeaseState(leaseName, Optional.of(holding(record)), values);
            });
  }

  /** {@return the tenure a record is, as an observer sees it} */
  static io.leasehold.LeaseHolding holding(KeyValue record) {
    String value = record.getValue().toString(StandardCharsets.UTF_8);
    Record r = Record.parse(value);
    String holder = r != null ? r.holder().toString() : value;
    return new io.leasehold.LeaseHolding(holder, record.getCreateRevision(), Optional.empty());
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
    CompletableFuture<AcquireResult> outcome =
        ensureWatch()
            .thenCombine(session.grant(timeout), (ready, grant) -> grant)
            .thenCompose(grant -> acquireWith(request, session, grant, true, true, inFlight));
    if (access.secure()) {
      // A failed TLS handshake fails the acquire with what failed, not with a timeout (jetcd
      // retries such a call longer than the operation timeout). The outcome is then unknown to
      // the engine, as for every failure, so it abandons the request.
      outcome = outcome.applyToEither(
          access.handshakeFailed().thenCompose(cause -> CompletableFuture.<AcquireResult>failedFuture(
              access.failure("the acquire of '" + request.leaseName() + "' failed", cause))),
          result -> result);
    }
    return outcome
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

    /** {@return whether the answer came or the holder stopped waiting} */
    synchronized boolean ended() {
      return ended;
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
    ByteSequence guard = bytes(guardKey(request.leaseName()));
    ByteSequence value = bytes(Record.encode(request.holder(), request.requestId()));
    PutOption attached = PutOption.builder().withLeaseId(grant.id).build();
    return kv.txn()
        .If(
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)),
            new Cmp(guard, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
        .Then(Op.put(key, value, attached), Op.put(guard, value, attached), Op.get(key, GetOption.DEFAULT))
        .Else(Op.get(key, GetOption.DEFAULT), Op.get(guard, GetOption.DEFAULT))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                if (Session.isLeaseNotFound(error)) {
                  session.markDead(grant, "etcd lease " + Long.toHexString(grant.id)
                      + " no longer exists in etcd (a put with it was refused)");
                  if (mayRegrant && !inFlight.ended()) {
                    // etcd refused the whole transaction, so nothing was written: a fresh
                    // session lease and one more try answer this acquire definitely — only while
                    // its holder still waits (a try after that could only make a grant nobody
                    // knows of).
                    return session
                        .grant(TimeUnit.SECONDS.toNanos(session.ttlSeconds()))
                        .thenCompose(g -> acquireWith(request, session, g, mayReplace, false, inFlight));
                  }
                }
                return CompletableFuture.<AcquireResult>failedFuture(
                    access.failure(
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
    List<GetResponse> gets = response.getGetResponses();
    KeyValue record = kvOf(gets, 0);
    // Without the record, the guard of a revoked tenure whose holder may not have stopped yet.
    KeyValue guard = response.isSucceeded() ? null : kvOf(gets, 1);
    KeyValue found = record != null ? record : guard;
    if (found == null) {
      return CompletableFuture.failedFuture(new LeaseProtocolException("etcd answered the acquire transaction for '" + request.leaseName()
              + "' without the key", null));
    }
    if (response.isSucceeded()) {
      return CompletableFuture.completedFuture(granted(request, grant, record));
    }
    Record r = Record.parse(found.getValue().toString(StandardCharsets.UTF_8));
    if (r == null || !r.holder().equals(request.holder())) {
      String holder = r != null ? r.holder().toString() : "(unreadable record)";
      return CompletableFuture.completedFuture(new AcquireResult.HeldElsewhere(holder));
    }
    if (record != null && r.requestId() == request.requestId()) {
      // This request's own tenure, made by an earlier attempt of it (a retry, or an attempt that
      // went on after its holder stopped waiting): never ended here, since the engine may have
      // begun it. Answered as a grant if this session still keeps its grant alive.
      Session.Grant on = record.getLease() == grant.id ? grant : session.liveGrant(record.getLease());
      if (on != null) {
        return CompletableFuture.completedFuture(granted(request, on, record)); // a retry
      }
      return CompletableFuture.completedFuture(new AcquireResult.HeldElsewhere(request.holder().toString()));
    }
    boolean lateCopy =
        record != null
            ? r.requestId() > request.requestId()
            // Only the guard: the same request id is a late copy of the revoked tenure's request.
            : r.requestId() >= request.requestId();
    if (lateCopy || !mayReplace) {
      return CompletableFuture.completedFuture(
          new AcquireResult.HeldElsewhere(request.holder().toString()));
    }
    // A tenure this holder gave up on (or that was revoked and it stopped using): end it on its
    // create revision, then acquire afresh.
    return end(request.leaseName(), found.getCreateRevision(), found.getValue())
        .thenCompose(ignored -> acquireWith(request, session, grant, false, mayRegrant, inFlight));
  }

  private AcquireResult granted(AcquireRequest request, Session.Grant grant, KeyValue record) {
    long token = record.getCreateRevision();
    // Pinned before the engine sees the grant, so that a retired grant is kept alive from the
    // moment the engine believes in the tenure.
    grant.pin();
    Held mine = new Held(request.holder(), token, grant, runtime.ticker().read());
    Held[] replaced = new Held[1];
    Held kept =
        held.compute(
            request.leaseName(),
            (name, before) -> {
              if (before != null && before.token > token) {
                // A newer tenure of this name is held: this answer came late (its tenure was
                // ended to begin the newer one), and the engine gives such a grant back.
                return before;
              }
              replaced[0] = before;
              return mine;
            });
    if (kept != mine) {
      grant.unpin();
    } else if (replaced[0] != null) {
      replaced[0].grant.unpin();
    }
    startChecking();
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
        throw new java.util.concurrent.CompletionException(access.failure(
            "the keep-alive of etcd lease " + Long.toHexString(g.id) + " failed " + g.failures
                + " time(s) since its last success", error));
      }
      return new RenewResult.Renewed(sent);
    });
  }

  /**
   * Reads the record (linearizably) before renewing: the keep-alive that answers a renewal may
   * predate an {@code etcdctl del}, and the watch may be silent, so only the record itself
   * confirms the tenure as of now.
   */
  @Override
  public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    return kv.get(bytes(key(tenure.leaseName())))
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(access.failure(
                    "reading the record of '" + tenure.leaseName() + "' to confirm it failed", error));
              }
              KeyValue record = response.getKvs().isEmpty() ? null : response.getKvs().get(0);
              Record r = record == null
                  ? null : Record.parse(record.getValue().toString(StandardCharsets.UTF_8));
              if (r == null || record.getCreateRevision() != tenure.token()
                  || !r.holder().equals(tenure.holder())) {
                forget(tenure.leaseName(), tenure.token());
                return CompletableFuture.<RenewResult>completedFuture(new RenewResult.Lost(
                    new LeaseLost(LeaseLost.Kind.REVOKED, "etcd no longer has the key "
                        + key(tenure.leaseName()) + " of tenure " + tenure.token()
                        + " (deleted in etcd)")));
              }
              return renew(tenure, sentAtNanos);
            })
        .thenCompose(f -> f);
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    ByteSequence value = bytes(Record.encode(tenure.holder(), tenure.requestId()));
    // The engine releases only a tenure it no longer believes in: stop keeping its grant alive
    // for it now, whether or not the delete gets through.
    Held h = forget(tenure.leaseName(), tenure.token());
    return end(tenure.leaseName(), tenure.token(), value)
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
                    access.failure("reading " + key(request.leaseName()) + " failed", error));
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
              return end(request.leaseName(), record.getCreateRevision(), record.getValue());
            });
  }

  /**
   * Ends a tenure in one transaction: if the record is still this tenure's (create revision and
   * value), deletes it and its guard (made with it, so this tenure's too, or gone); else deletes
   * the guard if it is this tenure's — the record was deleted in etcd, and its holder says it
   * stopped, so the name is free.
   */
  private CompletableFuture<Void> end(String leaseName, long createRevision, ByteSequence value) {
    ByteSequence key = bytes(key(leaseName));
    ByteSequence guard = bytes(guardKey(leaseName));
    // While the record or the guard is this tenure's, nobody else holds the name: every attached
    // key under it is this tenure's or older.
    Op deleteAttached =
        Op.delete(bytes(attachedPrefix(leaseName)), DeleteOption.builder().isPrefix(true).build());
    Cmp[] guardIsThisTenures = {
      new Cmp(guard, Cmp.Op.EQUAL, CmpTarget.createRevision(createRevision)),
      new Cmp(guard, Cmp.Op.EQUAL, CmpTarget.value(value))
    };
    return kv.txn()
        .If(
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(createRevision)),
            new Cmp(key, Cmp.Op.EQUAL, CmpTarget.value(value)))
        // The attached keys go in the same transaction, at the same revision as the record.
        .Then(Op.delete(key, DeleteOption.DEFAULT), Op.delete(guard, DeleteOption.DEFAULT), deleteAttached)
        .Else(Op.txn(guardIsThisTenures, new Op[] {Op.delete(guard, DeleteOption.DEFAULT), deleteAttached}, new Op[0]))
        .commit()
        .handle(
            (response, error) -> {
              if (error != null) {
                throw new java.util.concurrent.CompletionException(
                    access.failure("the conditional delete of " + key + " failed", error));
              }
              return null;
            });
  }

  // ---------------------------------------------------------------------------------------------
  // The periodic check of held records.

  /** Starts checking the held records every heartbeat, unless that runs already. */
  private void startChecking() {
    long interval;
    synchronized (this) {
      if (checking || closed) {
        return;
      }
      checking = true;
      interval = checkIntervalNanos;
    }
    runtime.timers().schedule(this::checkHeld, interval);
  }

  /**
   * One round: per session lease, one {@code LeaseTimeToLive} with its attached keys; a held
   * record not among them is read again linearizably (that answer may come from a replica that has
   * not applied the latest writes) and, if it is gone, its tenure is lost at once. So a holder
   * learns of an {@code etcdctl del} within a heartbeat even when its watch is silent. Meanwhile
   * the guard keeps the name from everyone else.
   */
  private void checkHeld() {
    long sent = runtime.ticker().read();
    Map<Session.Grant, List<Map.Entry<String, Held>>> byGrant = new HashMap<>();
    for (Map.Entry<String, Held> e : held.entrySet()) {
      Held h = e.getValue();
      if (h.since - sent < 0 && h.grant.dead == null) {
        byGrant.computeIfAbsent(h.grant, g -> new ArrayList<>()).add(e);
      }
    }
    long interval;
    synchronized (this) {
      if (closed || held.isEmpty()) {
        checking = false; // the next grant starts it again
        return;
      }
      interval = checkIntervalNanos;
    }
    byGrant.forEach(this::check);
    runtime.timers().schedule(this::checkHeld, interval);
  }

  private void check(Session.Grant grant, List<Map.Entry<String, Held>> tenures) {
    if (!checkingGrants.add(grant)) {
      return; // the last check of this grant is still in flight
    }
    client.getLeaseClient()
        .timeToLive(grant.id, LeaseOption.builder().withAttachedKeys().build())
        .thenCompose(
            ttl -> {
              Set<ByteSequence> attached = new HashSet<>(ttl.getKeys());
              List<Map.Entry<String, Held>> missing = new ArrayList<>();
              for (Map.Entry<String, Held> e : tenures) {
                if (!attached.contains(bytes(key(e.getKey())))) {
                  missing.add(e);
                }
              }
              return missing.isEmpty() ? CompletableFuture.completedFuture(null) : readAgain(missing);
            })
        .whenComplete(
            (ignored, error) -> {
              checkingGrants.remove(grant);
              if (error != null) {
                log.debug("Checking the records held with etcd lease {} failed: {}",
                    Long.toHexString(grant.id), error.toString());
              }
            });
  }

  /** Reads the records of {@code tenures} linearizably (100 per transaction); reports the gone. */
  private CompletableFuture<Void> readAgain(List<Map.Entry<String, Held>> tenures) {
    List<CompletableFuture<Void>> batches = new ArrayList<>();
    for (int from = 0; from < tenures.size(); from += 100) {
      List<Map.Entry<String, Held>> batch = tenures.subList(from, Math.min(tenures.size(), from + 100));
      Op[] gets = new Op[batch.size()];
      for (int i = 0; i < gets.length; i++) {
        gets[i] = Op.get(bytes(key(batch.get(i).getKey())), GetOption.DEFAULT);
      }
      batches.add(kv.txn().Then(gets).commit().thenAccept(response -> {
        List<GetResponse> records = response.getGetResponses();
        for (int i = 0; i < batch.size(); i++) {
          String name = batch.get(i).getKey();
          Held h = batch.get(i).getValue();
          KeyValue record = kvOf(records, i);
          if (record == null || record.getCreateRevision() != h.token) {
            report(name, h.holder, h.token, new LeaseLost(LeaseLost.Kind.REVOKED,
                "etcd no longer has the key " + key(name) + " of tenure " + h.token
                    + " (deleted in etcd; found by the periodic check of held records)"));
          }
        }
      }));
    }
    return CompletableFuture.allOf(batches.toArray(CompletableFuture[]::new));
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
  public LeaseException failure(String what, Throwable error) {
    return access.failure(what, error);
  }

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
                      access.failure("reading the etcd revision to watch from failed", error));
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

  /**
   * For tests: from now on the watch delivers nothing, as a watch whose server went silent without
   * closing it. Safety and the holder's learning of a deleted record must not depend on it.
   */
  void silenceWatch() {
    watchSilenced = true;
  }

  private void onWatch(WatchResponse response) {
    if (watchSilenced) {
      return;
    }
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

  /** {@return the key the {@code i}-th get of a transaction found, or null} */
  private static KeyValue kvOf(List<GetResponse> gets, int i) {
    return i < gets.size() && !gets.get(i).getKvs().isEmpty() ? gets.get(i).getKvs().get(0) : null;
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  /** A tenure this backend holds; it pins its grant. */
  private record Held(HolderId holder, long token, Session.Grant grant, long since) {}

  /**
   * For tests: retires the grant the tenure of {@code leaseName} (of TTL {@code ttl}) is on, as
   * the doubt of another operation on it would: the next acquire runs on a new grant.
   */
  void retireGrantOf(String leaseName, Duration ttl) {
    Held h = held.get(leaseName);
    Session session = sessions.get(ttlSeconds(ttl));
    if (h != null && session != null) {
      session.retire(h.grant());
    }
  }

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
