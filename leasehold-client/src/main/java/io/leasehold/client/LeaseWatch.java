package io.leasehold.client;

import io.grpc.stub.StreamObserver;
import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.Event;
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
 * no longer has that history it re-reads the keys instead (a resync), so no deletion is missed.
 * Both name this backend's sessions: the core sends and answers only their keys, so neither needs
 * a right on any lease name (an identity allowed only {@code lease billing/} can do both), and a
 * resync costs what this process holds, not what the cluster holds.
 *
 * <h2>A resync, page by page</h2>
 *
 * <p>The lease keys of a process (or, from a node before session-filtered reads, of the whole
 * cluster: 36,000 short ones are 4 MiB, gRPC's default limit) need not fit one answer, so a
 * resync reads them in pages ({@link PrefixPages}), each a linearizable read
 * at its own revision: page 1 at R1, page 2 at R2 ≥ R1, and so on, while leases change meanwhile.
 * What the resync must find is every tenure of this process whose key is gone from the core.
 * Why it ends right:
 *
 * <ol>
 *   <li>As soon as page 1 answers, the watch is opened again from R1 + 1: every deletion after R1
 *       (during the paging and after) is replayed by it, whatever page its key falls in.
 *   <li>Page p says exactly which keys in its key range existed at Rp. A tenure is its key with
 *       one create revision (its fencing token T); once deleted it never comes back (a new tenure
 *       has a new token). So a held tenure with T ≤ Rp whose key lies in page p's range and is not
 *       in the page with create revision T was deleted at or before Rp: it is reported lost.
 *   <li>A held tenure with T > Rp (acquired while the pages were read, its key in a page read
 *       before it existed) is not judged by that page: it was made after R1, so its deletion, if
 *       any, comes after R1 and the watch of step 1 reports it. Without this rule a lease
 *       acquired between pages was reported lost although the core held it.
 *   <li>A deletion the watch replays for a key a page already showed gone reports the same loss
 *       again; losses are per tenure and reported once (the store forgets the tenure), so an
 *       event older than what a page reflects cannot undo or repeat anything. The watch sends
 *       only deletions ({@code losses_only}), so no replayed event can make a gone tenure look
 *       present.
 * </ol>
 *
 * <p>So once the last page is read, every tenure gone at R1 or later is reported or will be by the
 * watch, and no tenure the core holds is. A failed page starts the resync over from page 1 after
 * {@value #RETRY_MILLIS} ms (the watch then restarts from the new R1); a newer resync (another gap)
 * supersedes one still paging.
 */
final class LeaseWatch implements AutoCloseable {

  /** The key prefix of named leases in the core. */
  static final String LEASE_PREFIX = CoreClient.LEASE_PREFIX;

  private static final Logger log = LoggerFactory.getLogger(LeaseWatch.class);
  private static final long RETRY_MILLIS = 100;
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(RETRY_MILLIS);

  /** Where the watch reports a deletion of a key a holder of this process may hold. */
  interface Losses {
    void lost(HolderId holder, String leaseName, long token, LeaseLost reason);

    /**
     * After a gap in the history, one page of the lease keys: which held tenures it shows gone
     * (see the class comment for which ones a page may judge).
     */
    void resync(PrefixPages.Page page);
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
  /** The first page's revision of the last completed resync; 0 before the first. */
  private long resyncedAt; // guarded by this
  /** Counts resyncs begun: a resync still paging stops when a newer one began. */
  private long resyncs; // guarded by this
  /** Keys per page of a resync. */
  private volatile int pageKeys = PrefixPages.PAGE_KEYS;
  /** Tests: runs when a page of a resync arrived (the watch runs again), before it is judged. */
  private volatile java.util.function.Consumer<PrefixPages.Page> onPage = page -> {};

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
    long generation;
    List<Long> sessions = sessionIds.get();
    synchronized (this) {
      if (closed) {
        return;
      }
      generation = ++resyncs;
      if (sessions.isEmpty()) {
        return; // no session, so no tenure to judge; a new session's watch starts afresh
      }
    }
    long[] firstRevision = new long[1];
    // Only this backend's own sessions' keys: what a resync judges (a held tenure is on one of
    // them, or gone), readable with no right on any name, and as large as what this process
    // holds rather than what the cluster holds.
    PrefixPages.read(
            client,
            LEASE_PREFIX,
            sessions,
            pageKeys,
            page -> {
              synchronized (this) {
                if (closed || generation != resyncs) {
                  throw new java.util.concurrent.CancellationException("a newer resync began, or the watch closed");
                }
                if (page.first()) {
                  // Every deletion after the first page's revision is the watch's to replay.
                  firstRevision[0] = page.revision();
                  nextRevision = page.revision() + 1;
                  restart();
                }
              }
              onPage.accept(page);
              losses.resync(page);
            })
        .whenComplete(
            (done, error) -> {
              synchronized (this) {
                if (closed || generation != resyncs) {
                  return;
                }
                if (error == null) {
                  resyncedAt = firstRevision[0];
                  return;
                }
              }
              log.debug("lease watch: a page of the resync failed ({}); reading again", error.toString());
              timers.schedule(this::resync, RETRY_NANOS);
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

  /** {@return the first page's revision of the last completed resync; 0 before the first} */
  synchronized long resyncedAt() {
    return resyncedAt;
  }

  /**
   * Tests: reads resyncs in pages of {@code keys} keys, and runs {@code each} when a page arrived,
   * before it is judged (changes it makes happen between the page's read and its use).
   */
  void pagesForTests(int keys, java.util.function.Consumer<PrefixPages.Page> each) {
    this.pageKeys = keys;
    this.onPage = each;
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (cancel != null) {
      cancel.run();
    }
  }
}
