package io.leasehold.zookeeper;

import io.leasehold.HolderId;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import io.leasehold.zookeeper.ZNodes.HolderRecord;
import io.leasehold.zookeeper.ZNodes.TenureRecord;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The three lease operations on ZooKeeper, for {@link ManagedLease}.
 *
 * <p><b>Session.</b> Curator keeps one ZooKeeper session for the whole backend; every holder node
 * is an ephemeral node of that session, so the ensemble deletes them all when the session expires,
 * and keeping the session alive keeps them all: heartbeat traffic does not grow with the number of
 * leases. The operations below go straight to the session's {@link ZooKeeper} handle, not through
 * Curator's retry loops, so that this class always knows which session an answer came from; the
 * engine does the retrying.
 *
 * <p><b>Acquire</b> is one multi-op transaction: rewrite the lease node on the data version just
 * read, and create the ephemeral holder node. The data version therefore counts tenures, and a
 * release is a transaction that checks it ("no tenure began since mine") before deleting: a late
 * or repeated release can never delete a newer holder's node, even one created at the same path
 * with the same node version. The fencing token is the transaction's zxid, which is the holder
 * node's czxid.
 *
 * <p><b>Renew</b> is answered from the session, not per lease: a round trip on the session (a
 * {@code sync} and then a cheap {@code exists}, shared by every renewal within a twentieth of the
 * TTL) proves the session was alive when the request reached the server, and ZooKeeper measures
 * session expiry from the last request it received. So the server keeps every node of the session
 * at least a session timeout after the probe was <em>sent</em>; the probe's send time is the
 * renewal's {@code validFrom}, and since the session timeout is at least the lease's TTL (checked
 * when the lease is made and when the session is negotiated), the holder's deadline, {@code
 * validFrom + TTL × (1 − drift) − margin}, always falls before the server may delete the node. The
 * {@code sync} goes through the ensemble's leader: a follower cut off from the quorum answers local
 * reads until it notices (up to {@code syncLimit × tickTime}), while the leader expires the session
 * on its own count; without the sync such a follower would confirm renewals all along. While
 * Curator reports the connection {@code SUSPENDED}, renewals fail at once: nothing extends a
 * deadline, which runs on. {@code LOST}, a new session, or the holder node deleted or replaced (a
 * watch on it) end the tenure at once. A renewal is confirmed only while that watch is armed:
 * ZooKeeper delivers a watch event before the reply to any read the server answers after the
 * change, so a probe answered with the watch still armed proves the node was there when the probe
 * was read; a watch that fired (or was never set) is re-armed by a read of the node first. A
 * shared probe may have been answered before a change whose event is still on its way, though, so
 * {@code acquire()} while holding ({@link #confirm}) does not lean on the watch: it waits for a
 * probe sent after the call and then reads the holder node itself.
 *
 * <p><b>Deleted holder nodes.</b> The lease node records the tenure (holder, session, TTL) until a
 * release rewrites it. When the holder node goes without a release — its session ended, or someone
 * deleted it — a contender acquires at once only if the tenure's session has ended (its ephemeral
 * session node is gone: the server ends a session only after the holder's deadline) or the holder
 * confirmed it stopped (it rewrites the record after its loss); otherwise it waits the tenure's TTL
 * out on its own clock from when it first saw the node gone, as no renewal of the holder succeeds
 * after the delete.
 *
 * <p><b>Orphans.</b> ZooKeeper has no per-node TTL, so a node that its lease no longer renews (an
 * acquire answered after the engine gave up on it, a release that never got through) would live as
 * long as the session. Each granted tenure is therefore reaped, by a conditional release, once the
 * engine has not renewed it for a whole TTL; the engine's own deadline has passed by then.
 */
final class ZooKeeperLeaseStore implements LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(ZooKeeperLeaseStore.class);

  /** A renewal may be answered by a probe sent at most this share of the TTL before it. */
  private static final int PROBE_REUSE_DIVISOR = 20;

  /** Acquire transactions that lose a race on the lease node's version are retried this often. */
  private static final int MAX_VERSION_RACES = 8;

  private final CuratorFramework client;
  private final ZooKeeperUri uri;
  private final String backendName;
  /** The ACL of every znode this store creates: open, or this backend's identity only. */
  private final List<ACL> acl;
  private final Ticker ticker;
  private final Scheduler timers;
  private final OpenLeases leases;
  private final Map<Long, Held> held = new ConcurrentHashMap<>();
  /** Lease names whose holder node a contender found deleted under a live session, and since when. */
  private final Map<String, Orphan> orphans = new ConcurrentHashMap<>();
  private final AtomicReference<Probe> lastProbe = new AtomicReference<>();
  /** Where watch events on holder nodes are handled: at once, unless a test holds them back. */
  private volatile Executor holderEvents = Runnable::run;
  /** Making (or made) the session node of the current session. */
  private final AtomicReference<SessionNodeTask> sessionNodeTask = new AtomicReference<>();
  private final Object lock = new Object();

  // Guarded by lock.
  private ZooKeeper live;
  private long liveSession;
  private final List<CompletableFuture<ZooKeeper>> waiting = new ArrayList<>();
  private boolean closed;

  ZooKeeperLeaseStore(
      CuratorFramework client, ZooKeeperUri uri, LeaseRuntime runtime, OpenLeases leases,
      List<ACL> acl) {
    this.client = client;
    this.uri = uri;
    this.backendName = uri.toString();
    this.acl = List.copyOf(acl);
    this.ticker = runtime.ticker();
    this.timers = runtime.timers();
    this.leases = leases;
  }

  // ---------------------------------------------------------------------------------------------
  // Connection state, from Curator's event thread.

  void stateChanged(ConnectionState state) {
    switch (state) {
      case CONNECTED, RECONNECTED -> connected();
      case SUSPENDED -> {
        synchronized (lock) {
          live = null;
        }
        log.warn(
            "Connection of {} to ZooKeeper suspended (session 0x{}); {} held lease(s) are not"
                + " renewed until it is back, and are lost at their local deadlines",
            backendName, Long.toHexString(liveSession), held.size());
      }
      case LOST -> {
        long lostSession;
        synchronized (lock) {
          live = null;
          lostSession = liveSession;
        }
        log.warn(
            "ZooKeeper session 0x{} of {} is lost (expired, or suspended for a whole session"
                + " timeout); its leases are gone",
            Long.toHexString(lostSession), backendName);
        endTenures(lostSession, true, "the ZooKeeper session 0x" + Long.toHexString(lostSession)
            + " that owned the holder node was lost");
      }
      default -> log.debug("{}: ZooKeeper connection state {}", backendName, state);
    }
  }

  private void connected() {
    ZooKeeper zk;
    try {
      zk = client.getZookeeperClient().getZooKeeper();
    } catch (Exception e) {
      log.warn("{}: connected, but Curator gave no ZooKeeper handle: {}", backendName, e.toString());
      return;
    }
    long session = zk.getSessionId();
    List<CompletableFuture<ZooKeeper>> ready;
    long previous;
    synchronized (lock) {
      previous = liveSession;
      live = zk;
      liveSession = session;
      ready = List.copyOf(waiting);
      waiting.clear();
    }
    if (previous != 0 && previous != session) {
      log.warn(
          "{} is connected to ZooKeeper again, in a new session 0x{}: leases of the old session"
              + " 0x{} are gone", backendName, Long.toHexString(session), Long.toHexString(previous));
    } else {
      log.info(
          "{} is connected to ZooKeeper in session 0x{} (session timeout {} ms)",
          backendName, Long.toHexString(session), zk.getSessionTimeout());
    }
    endTenures(session, false, "the ZooKeeper session that owned the holder node ended; the"
        + " backend is now in session 0x" + Long.toHexString(session));
    // Ready before the first acquire needs it (an acquire waits for it otherwise).
    sessionNode(zk).whenComplete((ok, e) -> {
      if (e != null) {
        log.debug("{}: the session node of session 0x{} is not made yet: {}", backendName,
            Long.toHexString(session), e.toString());
      }
    });
    ready.forEach(f -> f.complete(zk));
  }

  /** Ends the tenures of session {@code session} ({@code of}) or of every other session. */
  private void endTenures(long session, boolean of, String detail) {
    for (Held h : List.copyOf(held.values())) {
      if ((h.session == session) == of) {
        lose(h, new LeaseLost(LeaseLost.Kind.REVOKED, detail));
      }
    }
  }

  /**
   * Reports a tenure gone. The lease checks its own deadline first, so a loss that the deadline
   * already decided is reported as EXPIRED, as it happened; the store's reason applies otherwise
   * (and refuses a grant still on its way to the engine).
   */
  private boolean lose(Held h, LeaseLost reason) {
    if (held.remove(h.token, h) && !h.releasing) {
      h.loss = reason;
      log.info("Lease '{}' (token {}) of {} is gone: {}", h.leaseName, h.token, h.holder, reason);
      Optional<ManagedLease> lease = leases.find(h.holder);
      lease.ifPresent(ManagedLease::checkAlive);
      lease.ifPresent(l -> l.storeReportedLoss(h.token, reason));
      return true;
    }
    return false;
  }

  /** The handle of the live session, once there is one; fails after {@code patienceNanos}. */
  private CompletableFuture<ZooKeeper> session(long patienceNanos) {
    return session(patienceNanos, false);
  }

  /**
   * The handle of the live session, once there is one; fails after {@code patienceNanos}, or at
   * once if {@code failIfNeverConnected} and this TLS backend has never had a session.
   */
  private CompletableFuture<ZooKeeper> session(long patienceNanos, boolean failIfNeverConnected) {
    CompletableFuture<ZooKeeper> f;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(
            new LeaseStoreUnavailableException("backend " + backendName + " is closed", null));
      }
      if (live != null) {
        return CompletableFuture.completedFuture(live);
      }
      if (failIfNeverConnected && liveSession == 0 && uri.tls()) {
        // Opening waited a session timeout already; a TLS backend that never got a session is
        // most likely refused in the handshake, which ZooKeeper's client only logs. Say so now,
        // rather than let the request time out without a reason.
        return CompletableFuture.failedFuture(new LeaseStoreUnavailableException(
            "not connected to ZooKeeper (" + backendName + ") since it was opened"
                + tlsHint(uri), null));
      }
      f = new CompletableFuture<>();
      waiting.add(f);
    }
    Scheduler.Cancellable timer =
        timers.schedule(
            () -> {
              synchronized (lock) {
                waiting.remove(f);
              }
              f.completeExceptionally(
                  new LeaseStoreUnavailableException(
                      "not connected to ZooKeeper (" + backendName + ") for "
                          + TimeUnit.NANOSECONDS.toMillis(patienceNanos) + " ms"
                          + tlsHint(uri), null));
            },
            patienceNanos);
    f.whenComplete((zk, e) -> timer.cancel());
    return f;
  }

  /**
   * Waits for a live session.
   *
   * @param patienceNanos how long at most
   * @return whether there is one
   */
  boolean awaitSession(long patienceNanos) {
    try {
      session(patienceNanos).get();
      return true;
    } catch (java.util.concurrent.ExecutionException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  void close() {
    List<CompletableFuture<ZooKeeper>> stranded;
    synchronized (lock) {
      closed = true;
      live = null;
      stranded = List.copyOf(waiting);
      waiting.clear();
    }
    stranded.forEach(
        f -> f.completeExceptionally(
            new LeaseStoreUnavailableException("backend " + backendName + " is closed", null)));
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire.

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    long ttlNanos = request.ttl().toNanos();
    return session(ttlNanos, true)
        .thenCompose(
            zk -> {
              // A grant is of use only within the safe window after sending; after a long wait
              // for the connection, writing would only make a node for the reaper.
              if (ticker.read() - request.sentAtNanos() >= ttlNanos) {
                return CompletableFuture.failedFuture(
                    new LeaseStoreUnavailableException(
                        "the connection to ZooKeeper came back too late for this acquire", null));
              }
              checkSessionTimeout(zk, request.ttl().toMillis(), request.leaseName());
              return new Acquisition(zk, request).start();
            });
  }

  private void checkSessionTimeout(ZooKeeper zk, long ttlMillis, String leaseName) {
    int negotiated = zk.getSessionTimeout();
    if (negotiated > 0 && negotiated < ttlMillis) {
      throw new LeaseStoreUnavailableException(
          "ZooKeeper granted " + backendName + " a session timeout of " + negotiated + " ms, below"
              + " the ttl of lease '" + leaseName + "' (" + ttlMillis + " ms): the ensemble would"
              + " drop the lease before its holder stops. Lower the ttl, or raise the servers'"
              + " maxSessionTimeout", null);
    }
  }

  /**
   * Makes this session's session node, once per session: it must exist before the session's
   * first tenure (every acquire transaction checks it), so that its absence means the session
   * has ended. Started as soon as a session is connected; an acquire joins it.
   */
  private CompletableFuture<Void> sessionNode(ZooKeeper zk) {
    long session = zk.getSessionId();
    for (; ; ) {
      SessionNodeTask current = sessionNodeTask.get();
      if (current != null && current.session == session && !current.done.isCompletedExceptionally()) {
        return current.done;
      }
      SessionNodeTask fresh = new SessionNodeTask(session, new CompletableFuture<>());
      if (sessionNodeTask.compareAndSet(current, fresh)) {
        makeSessionNode(zk, session, fresh.done, true);
        return fresh.done;
      }
    }
  }

  /** Forgets the session node (someone deleted it): the next acquire makes it again. */
  private void sessionNodeGone(long session) {
    SessionNodeTask current = sessionNodeTask.get();
    if (current != null && current.session == session) {
      sessionNodeTask.compareAndSet(current, null);
    }
  }

  private void makeSessionNode(
      ZooKeeper zk, long session, CompletableFuture<Void> done, boolean makeParents) {
    String path = ZNodes.sessionNode(session);
    zk.create(path, new byte[0], acl, CreateMode.EPHEMERAL,
        (rc, p, ctx, name) -> {
          if (rc == Code.OK.intValue()) {
            done.complete(null);
          } else if (rc == Code.NODEEXISTS.intValue()) {
            // Made by an earlier call whose reply was lost, if it is this session's own.
            zk.exists(path, false, (rc2, p2, ctx2, stat) -> {
              if (rc2 == Code.OK.intValue() && stat.getEphemeralOwner() == session) {
                done.complete(null);
              } else if (rc2 == Code.OK.intValue()) {
                done.completeExceptionally(new LeaseStoreUnavailableException(
                    path + " exists but is not an ephemeral node of this session (0x"
                        + Long.toHexString(session) + "); delete it", null));
              } else {
                done.completeExceptionally(unavailable(rc2, "reading " + path));
              }
            }, null);
          } else if (rc == Code.NONODE.intValue() && makeParents) {
            createPersistent(zk, ZNodes.ROOT)
                .thenCompose(ignored -> createPersistent(zk, ZNodes.SESSIONS))
                .whenComplete((ok, e) -> {
                  if (e != null) {
                    done.completeExceptionally(e);
                  } else {
                    makeSessionNode(zk, session, done, false);
                  }
                });
          } else {
            done.completeExceptionally(unavailable(rc, "creating " + path));
          }
        }, null);
  }

  private CompletableFuture<Void> createPersistent(ZooKeeper zk, String path) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    zk.create(path, new byte[0], acl, CreateMode.PERSISTENT,
        (rc, p, ctx, name) -> {
          if (rc == Code.OK.intValue() || rc == Code.NODEEXISTS.intValue()) {
            done.complete(null);
          } else if (rc == Code.NONODE.intValue() && path.equals(ZNodes.ROOT)) {
            done.completeExceptionally(new LeaseStoreUnavailableException(
                "the chroot of " + backendName + " does not exist in ZooKeeper; create it"
                    + " first (ZooKeeper does not create a client's chroot)", null));
          } else {
            done.completeExceptionally(unavailable(rc, "creating " + path));
          }
        }, null);
    return done;
  }

  /**
   * One acquire request: read the lease node (its tenure record and version), look at the holder
   * node if a tenure is recorded, then one transaction.
   */
  private final class Acquisition {
    private final ZooKeeper zk;
    private final AcquireRequest request;
    private final String leaseNode;
    private final String holderNode;
    private final CompletableFuture<AcquireResult> result = new CompletableFuture<>();
    private int races;

    Acquisition(ZooKeeper zk, AcquireRequest request) {
      this.zk = zk;
      this.request = request;
      this.leaseNode = ZNodes.leaseNode(request.leaseName());
      this.holderNode = ZNodes.holderNode(request.leaseName());
    }

    CompletableFuture<AcquireResult> start() {
      sessionNode(zk).whenComplete((ok, e) -> {
        if (e != null) {
          fail(e);
        } else {
          readLeaseNode();
        }
      });
      return result;
    }

    private void readLeaseNode() {
      if (++races > MAX_VERSION_RACES) {
        fail(new LeaseStoreUnavailableException(
            "lease '" + request.leaseName() + "' changed under " + MAX_VERSION_RACES
                + " acquire transactions in a row", null));
        return;
      }
      zk.getData(leaseNode, false, (rc, path, ctx, data, stat) -> {
        if (rc == Code.OK.intValue()) {
          onLeaseNode(data, stat);
        } else if (rc == Code.NONODE.intValue()) {
          createLeaseNode();
        } else {
          fail(rc, "reading the lease node");
        }
      }, null);
    }

    /** No tenure recorded: try at once. A tenure recorded: is its holder node still there? */
    private void onLeaseNode(byte[] data, Stat leaseStat) {
      int version = leaseStat.getVersion();
      Optional<TenureRecord> tenure = TenureRecord.parse(data);
      if (tenure.isEmpty()) {
        tryCreate(version);
        return;
      }
      zk.getData(holderNode, false, (rc, path, ctx, holderData, holderStat) -> {
        if (rc == Code.OK.intValue()) {
          onHolderNode(version, holderData, holderStat);
        } else if (rc == Code.NONODE.intValue()) {
          orphaned(version, leaseStat.getMzxid(), tenure.get());
        } else {
          fail(rc, "reading the holder node");
        }
      }, null);
    }

    /**
     * A tenure is recorded but its holder node is gone, without a release. Either its session
     * ended (the server deletes a session's nodes only after the holder's deadline) or someone
     * deleted the node while the holder may still run: then the name waits until the holder
     * confirms it stopped (it rewrites the record), its session ends, or the tenure's TTL has
     * passed on this contender's clock since it first saw the node gone.
     */
    private void orphaned(int version, long recordZxid, TenureRecord tenure) {
      String sessionNode = ZNodes.sessionNode(tenure.session());
      zk.exists(sessionNode, false, (rc, path, ctx, stat) -> {
        if (rc == Code.NONODE.intValue()
            || (rc == Code.OK.intValue() && stat.getEphemeralOwner() != tenure.session())) {
          tryCreate(version); // the holder's session has ended
        } else if (rc == Code.OK.intValue()) {
          if (waitedOut(request.leaseName(), recordZxid, tenure)) {
            log.info("Lease '{}': the holder node of {} was deleted, its session 0x{} is still"
                    + " alive, and the tenure's TTL of {} ms has passed since: acquiring",
                request.leaseName(), tenure.holder(), Long.toHexString(tenure.session()),
                tenure.ttlMillis());
            tryCreate(version);
          } else {
            result.complete(new AcquireResult.HeldElsewhere(tenure.holder().toString()));
          }
        } else {
          fail(rc, "reading the session node of the last holder");
        }
      }, null);
    }

    /** Creates the lease node (version 0), and its parents first if they are missing too. */
    private void createLeaseNode() {
      zk.create(leaseNode, ZNodes.noTenure(request.leaseName()), acl,
          CreateMode.PERSISTENT,
          (rc, p, ctx, name) -> {
            if (rc == Code.OK.intValue()) {
              tryCreate(0);
            } else if (rc == Code.NODEEXISTS.intValue()) {
              readLeaseNode();
            } else if (rc == Code.NONODE.intValue()) {
              createPersistent(zk, ZNodes.ROOT)
                  .thenCompose(ignored -> createPersistent(zk, ZNodes.LEASES))
                  .whenComplete((ok, e) -> {
                    if (e != null) {
                      fail(e);
                    } else {
                      readLeaseNode();
                    }
                  });
            } else {
              fail(rc, "creating the lease node");
            }
          }, null);
    }

    private byte[] tenureRecord() {
      return new TenureRecord(request.holder(), zk.getSessionId(), request.ttl().toMillis())
          .toBytes();
    }

    /**
     * The acquire transaction: this session's node still exists, the lease node is still at
     * {@code version} (rewritten with our tenure record), and the holder node is created.
     */
    private void tryCreate(int version) {
      HolderRecord record = new HolderRecord(request.holder(), request.requestId(), version + 1);
      List<Op> ops = List.of(
          Op.check(ZNodes.sessionNode(zk.getSessionId()), -1),
          Op.setData(leaseNode, tenureRecord(), version),
          Op.create(holderNode, record.toBytes(), acl, CreateMode.EPHEMERAL));
      zk.multi(ops, (rc, path, ctx, results) -> {
        int failed = failedOp(results);
        if (rc == Code.OK.intValue()) {
          granted(results, record);
        } else if (failed == 2 && rc == Code.NODEEXISTS.intValue()) {
          readHolder(version);
        } else if (failed == 0) {
          sessionNodeGone();
        } else if (rc == Code.BADVERSION.intValue() || rc == Code.NONODE.intValue()) {
          readLeaseNode(); // another tenure began (or the node went) since we read the version
        } else {
          fail(rc, "the acquire transaction");
        }
      }, null);
    }

    /** Someone deleted this session's node: make it again, then start over. */
    private void sessionNodeGone() {
      ZooKeeperLeaseStore.this.sessionNodeGone(zk.getSessionId());
      sessionNode(zk).whenComplete((ok, e) -> {
        if (e != null) {
          fail(e);
        } else {
          readLeaseNode();
        }
      });
    }

    /** The lease is held: by whom? */
    private void readHolder(int version) {
      zk.getData(holderNode, false, (rc, path, ctx, data, stat) -> {
        if (rc == Code.NONODE.intValue()) {
          readLeaseNode(); // released meanwhile: try again
        } else if (rc != Code.OK.intValue()) {
          fail(rc, "reading the holder node");
        } else {
          onHolderNode(version, data, stat);
        }
      }, null);
    }

    private void onHolderNode(int version, byte[] data, Stat stat) {
      Optional<HolderRecord> parsed = HolderRecord.parse(data);
      if (parsed.isEmpty()) {
        result.complete(new AcquireResult.HeldElsewhere(
            "an unreadable holder node (" + new String(data == null ? new byte[0] : data,
                StandardCharsets.UTF_8).strip() + ")"));
        return;
      }
      HolderRecord found = parsed.get();
      if (!found.holder().equals(request.holder())) {
        result.complete(new AcquireResult.HeldElsewhere(found.holder().toString()));
      } else if (found.requestId() > request.requestId()) {
        result.complete(new AcquireResult.HeldElsewhere(found.holder().toString()));
      } else if (found.requestId() == request.requestId()
          && stat.getEphemeralOwner() == zk.getSessionId()) {
        // A retry whose first reply was lost: the same tenure.
        log.debug("Acquire of '{}' by {} was a retry; same tenure {}",
            request.leaseName(), request.holder(), stat.getCzxid());
        grantedTenure(stat.getCzxid(), found);
      } else {
        // A tenure this holder gave up (an older acquire call, or a session that ended):
        // replace it, on the lease node version read before the holder node, so that nothing
        // can have begun in between.
        Held old = held.get(stat.getCzxid());
        if (old != null) {
          old.releasing = true;
          held.remove(old.token, old);
        }
        replace(version, stat.getVersion());
      }
    }

    private void replace(int version, int holderVersion) {
      HolderRecord record = new HolderRecord(request.holder(), request.requestId(), version + 1);
      List<Op> ops = List.of(
          Op.check(ZNodes.sessionNode(zk.getSessionId()), -1),
          Op.setData(leaseNode, tenureRecord(), version),
          Op.delete(holderNode, holderVersion),
          Op.create(holderNode, record.toBytes(), acl, CreateMode.EPHEMERAL));
      zk.multi(ops, (rc, path, ctx, results) -> {
        if (rc == Code.OK.intValue()) {
          granted(results, record);
        } else if (failedOp(results) == 0) {
          sessionNodeGone();
        } else if (rc == Code.BADVERSION.intValue() || rc == Code.NONODE.intValue()
            || rc == Code.NODEEXISTS.intValue()) {
          readLeaseNode();
        } else {
          fail(rc, "the acquire transaction replacing an older tenure");
        }
      }, null);
    }

    private void granted(List<OpResult> results, HolderRecord record) {
      // Every operation of a multi shares one zxid: the lease node's new mzxid is the holder
      // node's czxid, the fencing token.
      long token = -1;
      for (OpResult r : results) {
        if (r instanceof OpResult.SetDataResult set) {
          token = set.getStat().getMzxid();
        }
      }
      grantedTenure(token, record);
    }

    private void grantedTenure(long token, HolderRecord record) {
      orphans.remove(request.leaseName());
      Held h = new Held(request.leaseName(), request.holder(), token, zk.getSessionId(),
          request.ttl().toNanos(), ticker.read(), record.generation());
      Held existing = held.putIfAbsent(token, h);
      Held tenure = existing != null ? existing : h;
      tenure.touched = ticker.read();
      if (existing == null) {
        watch(zk, tenure);
        scheduleReap(tenure);
        log.debug("Lease '{}' granted to {} with token {} (generation {}) in session 0x{}",
            request.leaseName(), request.holder(), token, record.generation(),
            Long.toHexString(tenure.session));
      }
      // The holder node was created by a request sent after sentAtNanos, which touched the session.
      result.complete(new AcquireResult.Acquired(token, request.sentAtNanos()));
    }

    private void fail(int rc, String what) {
      fail(unavailable(rc, what + " for lease '" + request.leaseName() + "'"));
    }

    private void fail(Throwable e) {
      result.completeExceptionally(e);
    }
  }

  /**
   * Whether this contender has seen the holder node of {@code leaseName} gone, under the same
   * tenure record, for that tenure's whole TTL on its own monotonic clock.
   */
  private boolean waitedOut(String leaseName, long recordZxid, TenureRecord tenure) {
    long now = ticker.read();
    Orphan seen = orphans.compute(leaseName,
        (name, o) -> o != null && o.recordZxid == recordZxid ? o : new Orphan(recordZxid, now));
    if (seen.sinceNanos == now) {
      log.info("Lease '{}': the holder node of {} was deleted while its session 0x{} is alive;"
              + " waiting for the holder to confirm it stopped, or for the tenure's TTL of {} ms",
          leaseName, tenure.holder(), Long.toHexString(tenure.session()), tenure.ttlMillis());
    }
    return now - seen.sinceNanos >= TimeUnit.MILLISECONDS.toNanos(tenure.ttlMillis());
  }

  /** Index of the operation that failed a multi, or -1. */
  private static int failedOp(List<OpResult> results) {
    if (results == null) {
      return -1;
    }
    for (int i = 0; i < results.size(); i++) {
      if (results.get(i) instanceof OpResult.ErrorResult error
          && error.getErr() != Code.OK.intValue()
          && error.getErr() != Code.RUNTIMEINCONSISTENCY.intValue()) {
        return i;
      }
    }
    return -1;
  }

  // ---------------------------------------------------------------------------------------------
  // Watching a held node.

  /**
   * Hands every watch event on a holder node to {@code events} instead of handling it on
   * ZooKeeper's event thread at once. For tests only: holding the events back stands for an
   * event still on its way (a slow network, a busy event thread), which ZooKeeper does not let a
   * test arrange on a real server.
   *
   * @param events runs the handling of each event
   */
  void handleHolderEventsOn(Executor events) {
    holderEvents = events;
  }

  /** Watches the holder node; a deletion or replacement by anyone but this store is a loss. */
  private void watch(ZooKeeper zk, Held h) {
    h.watcher = new Watcher() {
      @Override
      public void process(WatchedEvent event) {
        holderEvents.execute(() -> {
          if (event.getType() != Watcher.Event.EventType.None && held.get(h.token) == h) {
            // Until a read of the node says otherwise, no renewal is confirmed: this event comes
            // before the reply to any probe read after the change.
            h.armed = false;
            check(zk, h);
          }
        });
      }
    };
    check(zk, h);
  }

  /**
   * Reads the holder node and sets the watch again. Completes once the answer is handled: the
   * watch is armed if the node still is this tenure's; a deleted or replaced node is a loss.
   * Completes {@code true} if this read found the node this tenure's, {@code false} otherwise
   * (lost, or not read).
   */
  private CompletableFuture<Boolean> check(ZooKeeper zk, Held h) {
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    zk.getData(ZNodes.holderNode(h.leaseName), h.watcher, (rc, path, ctx, data, stat) -> {
      boolean ours = false;
      try {
        if (rc == Code.NONODE.intValue()) {
          if (lose(h, new LeaseLost(LeaseLost.Kind.REVOKED,
              "the holder node " + path + " was deleted by someone else (an operator, or a session"
                  + " that ended)"))) {
            confirmStopped(zk, h);
          }
        } else if (rc == Code.OK.intValue() && stat.getCzxid() != h.token) {
          String other = HolderRecord.parse(data).map(r -> r.holder().toString()).orElse("unknown");
          lose(h, new LeaseLost(LeaseLost.Kind.TAKEN_OVER,
              "the holder node " + path + " was replaced; it now holds tenure " + stat.getCzxid()
                  + " of " + other));
        } else if (rc == Code.OK.intValue()) {
          h.armed = true;
          ours = true;
        }
        // Other errors: the connection is down; Curator's state events and the deadline decide,
        // and the next renewal arms the watch again.
      } finally {
        done.complete(ours);
      }
    }, null);
    return done;
  }

  /**
   * After a loss to a deleted holder node, the holder has stopped (its lease was ended first):
   * say so in the lease node, unless another tenure began since, so that contenders need not wait
   * the tenure's TTL out.
   */
  private void confirmStopped(ZooKeeper zk, Held h) {
    zk.setData(ZNodes.leaseNode(h.leaseName), ZNodes.noTenure(h.leaseName), h.generation,
        (rc, path, ctx, stat) -> log.debug("Confirming that tenure {} of '{}' stopped: {}",
            h.token, h.leaseName, Code.get(rc)), null);
  }

  // ---------------------------------------------------------------------------------------------
  // Renew.

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    return renew(tenure, sentAtNanos, false);
  }

  /**
   * As {@link #renew}, but from a probe sent after this call and then a read of the holder node
   * itself. A renewal may be answered by a probe sent before the call, with the watch still armed
   * only because the event of a later delete or takeover has not reached this client yet; the
   * node read after a sync of this call's own is the store as of a moment after the call.
   */
  @Override
  public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    return renew(tenure, sentAtNanos, true);
  }

  private CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos, boolean confirm) {
    Held h = held.get(tenure.token());
    if (h == null || !h.holder.equals(tenure.holder())) {
      return lost(LeaseLost.Kind.REVOKED, "the holder node of tenure " + tenure.token()
          + " is gone (its session ended, it was deleted, or it was reaped)");
    }
    h.touched = ticker.read();
    ZooKeeper zk;
    synchronized (lock) {
      zk = live;
    }
    if (zk == null) {
      // SUSPENDED: nothing extends the deadline until the session is confirmed again.
      return CompletableFuture.failedFuture(new LeaseStoreUnavailableException(
          "the connection to ZooKeeper is suspended; renewal of lease '" + tenure.leaseName()
              + "' waits for it", null));
    }
    if (zk.getSessionId() != h.session) {
      lose(h, new LeaseLost(LeaseLost.Kind.REVOKED, "the ZooKeeper session 0x"
          + Long.toHexString(h.session) + " that owned the holder node ended"));
      return lost(LeaseLost.Kind.REVOKED, "the ZooKeeper session 0x" + Long.toHexString(h.session)
          + " that owned the holder node ended");
    }
    try {
      checkSessionTimeout(zk, tenure.ttl().toMillis(), tenure.leaseName());
    } catch (LeaseException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (confirm) {
      // A probe sent no earlier than this call (its sync orders the read after it), then the
      // node itself: a deleted or replaced one is the loss it is, whatever the watch said so far.
      return probe(zk, sentAtNanos, 0).thenCompose(probeSent -> check(zk, h)
          .thenCompose(ours -> answer(tenure, h, probeSent, ours)));
    }
    long reuse = tenure.ttl().toNanos() / PROBE_REUSE_DIVISOR;
    CompletableFuture<Boolean> armed =
        h.armed ? CompletableFuture.completedFuture(true) : check(zk, h);
    // A deletion before the probe was answered has been seen by then: ZooKeeper delivers a watch
    // event before the answers to requests read after the change.
    return armed
        .thenCompose(ignored -> probe(zk, sentAtNanos, reuse))
        .thenCompose(probeSent -> answer(tenure, h, probeSent, h.armed));
  }

  /**
   * The answer to a renewal whose probe was sent at {@code probeSent}.
   *
   * @param seen whether the holder node is known to be this tenure's as of the probe's answer
   */
  private CompletableFuture<RenewResult> answer(Tenure tenure, Held h, long probeSent, boolean seen) {
    if (held.get(tenure.token()) != h) {
      LeaseLost loss = h.loss;
      return loss != null
          ? CompletableFuture.completedFuture(new RenewResult.Lost(loss))
          : lost(LeaseLost.Kind.REVOKED, "the holder node of tenure " + tenure.token() + " is gone");
    }
    if (!seen) {
      // The node changed, or its watch or read did not get through: its next read decides.
      return CompletableFuture.failedFuture(new LeaseStoreUnavailableException(
          "the holder node of lease '" + tenure.leaseName() + "' changed or is not watched;"
              + " reading it again", null));
    }
    return CompletableFuture.completedFuture(new RenewResult.Renewed(probeSent));
  }

  /**
   * A round trip on the session, shared: a probe sent at most {@code reuseNanos} before {@code
   * sentAtNanos} on the same handle answers for this renewal too. Completes with the probe's send
   * time, the instant from which the server's session timeout runs at the latest.
   *
   * <p>The probe is a {@code sync}, which the server forwards to the ensemble's leader and
   * answers only after it has applied everything the leader had committed by then, followed by an
   * {@code exists}. A follower cut off from the quorum cannot answer the sync, so it confirms
   * nothing while it goes on serving local reads for up to {@code syncLimit × tickTime}.
   */
  private CompletableFuture<Long> probe(ZooKeeper zk, long sentAtNanos, long reuseNanos) {
    Probe last = lastProbe.get();
    if (last != null && last.zk == zk && last.sentAt - (sentAtNanos - reuseNanos) >= 0
        && !last.done.isCompletedExceptionally()) {
      return last.done;
    }
    Probe fresh = new Probe(zk, ticker.read(), new CompletableFuture<>());
    lastProbe.set(fresh);
    try {
      zk.sync(ZNodes.LEASES, (rc, path, ctx) -> {
        if (rc != Code.OK.intValue()) {
          fresh.done.completeExceptionally(
              unavailable(rc, "the session keep-alive's sync with the ZooKeeper leader"));
          return;
        }
        zk.exists(ZNodes.LEASES, false, (rc2, path2, ctx2, stat) -> {
          if (rc2 == Code.OK.intValue() || rc2 == Code.NONODE.intValue()) {
            fresh.done.complete(fresh.sentAt);
          } else {
            fresh.done.completeExceptionally(unavailable(rc2, "the session keep-alive"));
          }
        }, null);
      }, null);
    } catch (RuntimeException e) {
      fresh.done.completeExceptionally(e);
    }
    return fresh.done;
  }

  private static CompletableFuture<RenewResult> lost(LeaseLost.Kind kind, String detail) {
    return CompletableFuture.completedFuture(new RenewResult.Lost(new LeaseLost(kind, detail)));
  }

  // ---------------------------------------------------------------------------------------------
  // Release, and reaping what nobody renews.

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    Held h = held.get(tenure.token());
    if (h != null) {
      h.releasing = true; // its node's deletion is ours, not a loss
    }
    return session(tenure.ttl().toNanos())
        .thenCompose(zk -> deleteIfStill(zk, tenure.leaseName(), tenure.token(),
            h != null ? h.generation : -1, h != null ? List.copyOf(h.attached) : List.of()))
        .thenRun(() -> {
          if (h != null) {
            held.remove(h.token, h);
          }
        });
  }

  // ---------------------------------------------------------------------------------------------
  // Attached keys.

  @Override
  public boolean supportsAttach() {
    return true;
  }

  /**
   * Creates the ephemeral child {@code attached-<key>} of the lease node in a multi that checks
   * the lease node is still at the version this tenure's creation left (every later tenure and
   * every release changes it) and the holder node still exists (a revocation deletes it): a write
   * after the tenure ended changes nothing. A key that exists already is deleted and created anew
   * in the same multi (so it belongs to this session, and to no earlier tenure).
   */
  @Override
  public CompletableFuture<Boolean> attach(Tenure tenure, String key, String value) {
    Held h = held.get(tenure.token());
    if (h == null || !h.holder.equals(tenure.holder())) {
      return CompletableFuture.completedFuture(false);
    }
    h.attached.add(key); // before it is sent: a release meanwhile deletes it too
    return session(tenure.ttl().toNanos()).thenCompose(zk -> attach(zk, h, key, value, false, 3));
  }

  private CompletableFuture<Boolean> attach(
      ZooKeeper zk, Held h, String key, String value, boolean replace, int tries) {
    String lease = ZNodes.leaseNode(h.leaseName);
    String child = lease + "/" + LeaseSnapshot.attachedChild(key);
    List<Op> ops = new ArrayList<>(List.of(
        Op.check(lease, h.generation), Op.check(ZNodes.holderNode(h.leaseName), -1)));
    if (replace) {
      ops.add(Op.delete(child, -1));
    }
    ops.add(Op.create(child, value.getBytes(StandardCharsets.UTF_8), acl,
        CreateMode.EPHEMERAL));
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    zk.multi(ops, (rc, path, ctx, results) -> {
      int failedAt = -1;
      if (results != null) {
        for (int i = 0; i < results.size(); i++) {
          if (results.get(i) instanceof OpResult.ErrorResult e && e.getErr() != 0) {
            failedAt = i;
            break;
          }
        }
      }
      if (rc == Code.OK.intValue()) {
        done.complete(true);
      } else if (failedAt == 0 || failedAt == 1) {
        done.complete(false); // the lease node moved on, or the holder node is gone
      } else if (tries > 1 && (rc == Code.NODEEXISTS.intValue() || rc == Code.NONODE.intValue())) {
        attach(zk, h, key, value, rc == Code.NODEEXISTS.intValue(), tries - 1).whenComplete((ok, e) -> {
          if (e != null) {
            done.completeExceptionally(e);
          } else {
            done.complete(ok);
          }
        });
      } else {
        done.completeExceptionally(unavailable(rc, "attaching key '" + key + "' to '" + h.leaseName + "'"));
      }
    }, null);
    return done;
  }

  /**
   * Deletes the holder node if it is still tenure {@code token}, in a transaction that also
   * rewrites the lease node's tenure record as released, on the version this tenure's creation
   * left: if any tenure began since, nothing is changed. If the holder node is already gone
   * (deleted by someone else), only the record is rewritten, on the same condition: the tenure
   * has ended here, so contenders need not wait it out.
   *
   * <p>The transaction also deletes the keys attached to the tenure ({@code attached}), so they go
   * at the same zxid as the holder node. If one of them is gone already (someone deleted it), the
   * transaction is tried again without them; they are ephemeral, and reads ignore keys older than
   * the tenure they find.
   *
   * @param generation the lease node version the tenure's creation left, or -1 if unknown
   * @param attached the keys attached to the tenure
   */
  private CompletableFuture<Void> deleteIfStill(
      ZooKeeper zk, String leaseName, long token, int generation, List<String> attached) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    String holderNode = ZNodes.holderNode(leaseName);
    zk.getData(holderNode, false, (rc, path, ctx, data, stat) -> {
      if (rc == Code.NONODE.intValue()) {
        if (generation < 0) {
          done.complete(null);
          return;
        }
        zk.setData(ZNodes.leaseNode(leaseName), ZNodes.noTenure(leaseName), generation,
            (rc2, p2, ctx2, stat2) -> {
              if (rc2 == Code.OK.intValue() || rc2 == Code.BADVERSION.intValue()
                  || rc2 == Code.NONODE.intValue()) {
                done.complete(null);
              } else {
                done.completeExceptionally(unavailable(rc2, "releasing lease '" + leaseName + "'"));
              }
            }, null);
        return;
      }
      if (rc != Code.OK.intValue()) {
        done.completeExceptionally(unavailable(rc, "reading the holder node of '" + leaseName + "'"));
        return;
      }
      Optional<HolderRecord> record = HolderRecord.parse(data);
      if (stat.getCzxid() != token || record.isEmpty()) {
        done.complete(null); // another tenure's node: not ours to delete
        return;
      }
      List<Op> ops = new ArrayList<>(List.of(
          Op.setData(ZNodes.leaseNode(leaseName),
              ZNodes.released(leaseName, record.get().holder().toString(), token),
              record.get().generation()),
          Op.delete(holderNode, stat.getVersion())));
      for (String key : attached) {
        ops.add(Op.delete(ZNodes.leaseNode(leaseName) + "/" + LeaseSnapshot.attachedChild(key), -1));
      }
      zk.multi(ops, (rc2, p2, ctx2, results) -> {
        if (rc2 == Code.NONODE.intValue() && !attached.isEmpty()) {
          deleteIfStill(zk, leaseName, token, generation, List.of()).whenComplete((ok, e) -> {
            if (e != null) {
              done.completeExceptionally(e);
            } else {
              done.complete(null);
            }
          });
        } else if (rc2 == Code.OK.intValue() || rc2 == Code.BADVERSION.intValue()
            || rc2 == Code.NONODE.intValue()) {
          done.complete(null);
        } else {
          done.completeExceptionally(unavailable(rc2, "releasing lease '" + leaseName + "'"));
        }
      }, null);
    }, null);
    return done;
  }

  private void scheduleReap(Held h) {
    long due = h.touched + h.ttlNanos - ticker.read();
    timers.schedule(() -> reapIfIdle(h), due);
  }

  private void reapIfIdle(Held h) {
    if (held.get(h.token) != h) {
      return;
    }
    if (ticker.read() - (h.touched + h.ttlNanos) < 0) {
      scheduleReap(h);
      return;
    }
    log.info(
        "Deleting the holder node of lease '{}' (token {}): its lease has not renewed it for a"
            + " whole TTL (an acquire answered too late, or a release that did not get through)",
        h.leaseName, h.token);
    h.releasing = true;
    ZooKeeper zk;
    synchronized (lock) {
      zk = live;
    }
    if (zk == null) {
      h.releasing = false;
      h.touched = ticker.read() - h.ttlNanos + h.ttlNanos / 4; // try again soon
      scheduleReap(h);
      return;
    }
    deleteIfStill(zk, h.leaseName, h.token, h.generation, List.copyOf(h.attached)).whenComplete((ok, e) -> {
      if (e == null) {
        held.remove(h.token, h);
      } else {
        h.releasing = false;
        h.touched = ticker.read() - h.ttlNanos + h.ttlNanos / 4;
        scheduleReap(h);
      }
    });
  }

  private LeaseException unavailable(int rc, String what) {
    Code code = Code.get(rc);
    String hint = "";
    if (code == Code.NOAUTH) {
      // Digest authentication never fails by itself: a wrong password is another identity,
      // refused only when it touches a znode it has no right to.
      hint = uri.digest()
          ? ": ZooKeeper refused user '" + uri.user() + "' the right to do this. The znode was"
              + " created by another identity: is the password in password-file '"
              + uri.passwordFile() + "' the one the other holders use?"
          : ": ZooKeeper refused this unauthenticated backend; the znodes are protected by an"
              + " ACL: give the URI user= and password-file= of the identity that created them";
    }
    return new LeaseStoreUnavailableException(
        what + " failed: " + (code != null ? code : "code " + rc) + hint,
        code != null ? KeeperException.create(code) : null);
  }

  /** {@return why a TLS backend may not connect, for a message that says it is not connected} */
  static String tlsHint(ZooKeeperUri uri) {
    return uri.tls()
        ? " (TLS: check that the servers' certificates come from an authority in ca '" + uri.ca()
            + "' and name the host in the URI, that the port is the servers' secureClientPort, and"
            + " that the servers trust the authority of cert"
            + (uri.cert() != null ? " '" + uri.cert() + "'" : " (none given)") + ")"
        : "";
  }

  /** A tenure this store granted and has not seen end. */
  private static final class Held {
    final String leaseName;
    final HolderId holder;
    final long token;
    final long session;
    final long ttlNanos;
    /** Ticker reading of the last grant or renewal request. */
    volatile long touched;
    /** The lease node's version that the tenure's creation left. */
    final int generation;
    /** Keys attached to this tenure (or being attached): the release deletes them with it. */
    final java.util.Set<String> attached = ConcurrentHashMap.newKeySet();
    /** Set while this store itself deletes the node, so the watch does not call it a loss. */
    volatile boolean releasing;
    /** The watch on the holder node. */
    volatile Watcher watcher;
    /**
     * Whether the watch is set and the node was this tenure's at the last read: no event for it
     * has arrived since. Only then is a renewal confirmed.
     */
    volatile boolean armed;
    /** Why the store reported this tenure lost, once it did: a renewal answered later says so. */
    volatile LeaseLost loss;

    Held(String leaseName, HolderId holder, long token, long session, long ttlNanos, long touched,
        int generation) {
      this.leaseName = leaseName;
      this.holder = holder;
      this.token = token;
      this.session = session;
      this.ttlNanos = ttlNanos;
      this.touched = touched;
      this.generation = generation;
    }
  }

  private record Probe(ZooKeeper zk, long sentAt, CompletableFuture<Long> done) {}

  private record SessionNodeTask(long session, CompletableFuture<Void> done) {}

  /** A tenure record whose holder node a contender found gone, and since when it saw that. */
  private record Orphan(long recordZxid, long sinceNanos) {}
}
