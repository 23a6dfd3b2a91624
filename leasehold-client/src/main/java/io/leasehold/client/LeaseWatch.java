package io.leasehold.client;

import io.grpc.stub.StreamObserver;
import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the keys of named leases so that a holder hears at once when its key is deleted by
 * anyone but itself (an operator's revoke, the session's expiry). One watch per backend, on the
 * whole lease prefix; it resumes after a reconnect from the last revision it saw, and if the core
 * no longer has that history it re-reads the keys instead, so no deletion is missed.
 */
final class LeaseWatch implements AutoCloseable {

  /** The key prefix of named leases in the core. */
  static final String LEASE_PREFIX = CoreClient.LEASE_PREFIX;

  private static final Logger log = LoggerFactory.getLogger(LeaseWatch.class);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** Where the watch reports a deletion of a key a holder of this process may hold. */
  interface Losses {
    void lost(HolderId holder, String leaseName, long token, LeaseLost reason);

    /** After a gap in the history: is this (holder, lease, token) still in the core? */
    void resync(GetResponse current);
  }

  private final CoreClient client;
  private final Scheduler timers;
  private final Losses losses;
  private final Supplier<List<Long>> sessionIds;
  private long nextRevision; // guarded by this
  /** The start revision of the running watch; 0 while it runs from "now" (not yet known). */
  private long openedFrom; // guarded by this
  private Runnable cancel; // guarded by this
  private boolean started; // guarded by this
  private boolean closed; // guarded by this

  /**
   * @param sessionIds this backend's live sessions: the core sends only events of keys attached
   *     to them, so a backend is not told every other client's changes
   */
  LeaseWatch(CoreClient client, Scheduler timers, Losses losses, Supplier<List<Long>> sessionIds) {
    this.client = client;
    this.timers = timers;
    this.losses = losses;
    this.sessionIds = sessionIds;
  }

  /** A session was granted: watch its keys too (from where the watch is, so nothing is missed). */
  synchronized void sessionsChanged() {
    if (started && !closed) {
      restart();
    }
  }

  /** Makes sure a watch runs; before any tenure exists it may start from "now". */
  synchronized void ensureStarted() {
    if (!started && !closed) {
      started = true;
      open();
    }
  }

  /**
   * A tenure was created at {@code revision}: the watch must cover it from there. A watch that
   * started at or before it does (a deletion it delivered before the grant's reply reached the
   * lease is remembered there, see {@code ManagedLease.storeReportedLoss}), so it is restarted only
   * when it started later or from an unknown "now" — not on every acquire, which under load
   * replayed the history once per grant.
   */
  synchronized void watchFrom(long revision) {
    if (openedFrom == 0 || revision < openedFrom) {
      nextRevision = nextRevision == 0 ? revision : Math.min(nextRevision, revision);
      restart();
    }
  }

  private synchronized void restart() {
    if (cancel != null) {
      cancel.run();
      cancel = null;
    }
    open();
  }

  private synchronized void open() {
    List<Long> sessions = sessionIds.get();
    if (closed || sessions.isEmpty()) {
      current = null; // a cancelled watch's last words are then ignored
      openedFrom = 0;
      return; // no session, so no key of ours to watch; a new session opens the watch again
    }
    WatchRequest request =
        WatchRequest.newBuilder()
            .setKey(LEASE_PREFIX)
            .setPrefix(true)
            .setStartRevision(nextRevision)
            .addAllSessionIds(sessions)
            // Its own acquires and releases tell it nothing: not sent back, two messages a cycle.
            .setLossesOnly(true)
            .build();
    openedFrom = nextRevision;
    Object[] self = new Object[1];
    StreamObserver<WatchResponse> observer =
        new StreamObserver<>() {
          @Override
          public void onNext(WatchResponse response) {
            handle(self[0], response);
          }

          @Override
          public void onError(Throwable t) {
            ended(self[0], t);
          }

          @Override
          public void onCompleted() {
            ended(self[0], null);
          }
        };
    self[0] = observer;
    cancel = client.watch(request, observer);
    current = observer;
  }

  private Object current; // guarded by this

  private void handle(Object which, WatchResponse response) {
    synchronized (this) {
      if (which != current) {
        return; // a watch we replaced
      }
      if (response.getCompactRevision() != 0) {
        log.info("lease watch: history before revision {} is gone; re-reading the leases", response.getCompactRevision());
        nextRevision = 0;
        resync();
        return;
      }
      if (response.getProgressRevision() != 0) {
        // Everything up to it was sent: a resume elsewhere starts after it, not at the last event.
        nextRevision = Math.max(nextRevision, response.getProgressRevision() + 1);
        return;
      }
    }
    for (Event e : response.getEventsList()) {
      KeyValue kv = e.getKv();
      synchronized (this) {
        nextRevision = Math.max(nextRevision, kv.getModRevision() + 1);
      }
      if (e.getType() != Event.Type.DELETE || !kv.getKey().startsWith(LEASE_PREFIX)) {
        continue;
      }
      HolderId holder;
      try {
        holder = HolderId.parse(kv.getValue().toStringUtf8());
      } catch (IllegalArgumentException notOurs) {
        continue;
      }
      String cause = e.getCause();
      if (cause.equals(DeleteCauses.RELEASED) || cause.equals(DeleteCauses.SESSION_CLOSED)) {
        continue; // the holder's own release, or its own session closing
      }
      LeaseLost.Kind kind = cause.equals(DeleteCauses.SESSION_EXPIRED) ? LeaseLost.Kind.EXPIRED : LeaseLost.Kind.REVOKED;
      String detail =
          cause.isEmpty() ? "the lease's key was deleted in the core (revoked by an operator)" : "core: " + cause;
      losses.lost(holder, kv.getKey().substring(LEASE_PREFIX.length()), kv.getCreateRevision(), new LeaseLost(kind, detail));
    }
  }

  private void resync() {
    GetRequest get = GetRequest.newBuilder().setKey(LEASE_PREFIX).setPrefix(true).build();
    client
        .<GetResponse>call((stub, out) -> stub.get(get, out))
        .whenComplete(
            (current, error) -> {
              if (error != null) {
                synchronized (this) {
                  if (closed) {
                    return;
                  }
                }
                timers.schedule(this::resync, RETRY_NANOS);
                return;
              }
              losses.resync(current);
              synchronized (this) {
                nextRevision = current.getRevision() + 1;
                restart();
              }
            });
  }

  private void ended(Object which, Throwable t) {
    long from;
    synchronized (this) {
      if (which != current || closed) {
        return;
      }
      current = null;
      from = nextRevision;
    }
    long pause = WatchLimits.afterEnd(t, client, log, "lease watch", from, RETRY_NANOS);
    timers.schedule(
        () -> {
          synchronized (this) {
            if (current == null) {
              open();
            }
          }
        },
        pause);
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (cancel != null) {
      cancel.run();
    }
  }
}
