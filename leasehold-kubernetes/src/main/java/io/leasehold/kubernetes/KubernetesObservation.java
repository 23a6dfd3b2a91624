package io.leasehold.kubernetes;

import io.leasehold.spi.OpenObservations;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseSpec;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.Scheduler;
import io.leasehold.spi.Observation;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observation of a named lease on Kubernetes: a read of the Lease object, then a watch of it
 * from the read's {@code resourceVersion}. fabric8 resumes the watch from the last version it
 * delivered after a dropped connection; when the API server no longer has that version ({@code
 * 410 Gone}) the watch closes with an error, and the object is read again and reported as a
 * {@code GAP}.
 *
 * <p>Every event carries the whole object, so each is compared with the holding last reported:
 * no holder → a holder is {@code ACQUIRED}; a holder → none is {@code RELEASED}; one holder →
 * another is {@code TAKEN_OVER}; a deleted object is {@code REVOKED}. Kubernetes has no
 * server-side expiry: as a contender does, the observer counts a held object whose {@code
 * resourceVersion} it has seen unchanged for its {@code leaseDurationSeconds}, on its own monotonic
 * clock, as {@code EXPIRED} (the holder, whose deadline is shorter, has stopped by then), once a
 * read confirms the API server still has that version (see {@link #confirmExpiry}). That
 * clock runs only while the watch is open: an observer that is not watching (its watch still
 * opening, or closed and being read again) has seen nothing stay unchanged, and says nothing.
 *
 * <p>Events are handled one at a time on the backend's timer thread.
 */
final class KubernetesObservation implements Watcher<Lease>, OpenObservations.StoreWatch {

  private static final Logger log = LoggerFactory.getLogger(KubernetesObservation.class);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
  private static final long MAX_CONFIRM_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(5);
  /** After this many failed reads to confirm an expiry in a row, one line at INFO says so. */
  private static final int CONFIRM_FAILURES_LOGGED = 5;
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(10);
  /**
   * How long an opening of the watch may take before another one is started: far longer than an
   * API server takes to answer one (its answer is the upgrade, before any event), so that only a
   * connection that will never answer is given up on.
   */
  static final Duration OPENING_PATIENCE = Duration.ofSeconds(60);

  /** Threads that open watches, per backend: see {@link #newWatchOpener()}. */
  static final int WATCH_OPENING_THREADS = 4;

  /**
   * Where one backend's watches are opened. fabric8's {@code watch} blocks until the API server
   * has answered the watch request, and waits for it without a time limit of its own (8.0.0:
   * {@code waitUntilReadyOrFail(future, -1)}), so an opening can hold its thread for as long as
   * a dropped or slow connection takes to fail. Kept off the timer thread and the common pool.
   *
   * <p>Bounded: at most {@value #WATCH_OPENING_THREADS} daemon threads (an unbounded cached pool
   * would start one thread per observation while the API server hangs — thousands of threads for
   * thousands of observed leases), started on demand and ended after 30 s idle, and shut down with
   * the backend. Why a slow opening does not starve the others: it holds one thread and the
   * others go on opening on the rest. Openings queue (in order) only when all of them are held,
   * and every observation of a backend opens its watch through the same client to the same API
   * server, so that many stuck at once means the server is not answering anyone — another thread
   * would only be one more stuck call. A failed opening is retried by reading again (after 200
   * ms), at the back of the queue, so one observation cannot keep the threads to itself. A backend
   * of its own per cluster keeps a stuck cluster from holding up another's observations.
   *
   * @return a new executor for one backend; shut it down when the backend closes
   */
  static ThreadPoolExecutor newWatchOpener() {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(
        WATCH_OPENING_THREADS, WATCH_OPENING_THREADS, 30, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(),
        runnable -> {
          Thread thread = new Thread(runnable, "leasehold-kubernetes-watch-open");
          thread.setDaemon(true);
          return thread;
        });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  private final KubernetesClient client;
  private final LeaseApi api;
  private final Scheduler timers;
  private final Executor watchOpener;
  private final Duration openingPatience;
  private final Observation observation;
  private final String objectName;
  // All below: touched only on the timer thread.
  private Optional<LeaseHolding> reported = Optional.empty();
  private boolean expired;
  /** {@code leaseTransitions} of the object last taken in; -1 while there is no object. */
  private int transitions = -1;
  private String version;
  /** {@code leaseDurationSeconds} of the object last taken in. */
  private Integer durationSeconds;
  /** Whether a watch is open, so that an unchanged version means the object did not change. */
  private boolean watching;
  private Scheduler.Cancellable expiry;
  /**
   * Counts each arming and stopping of the expiry clock, so that a confirming read answered after
   * the clock was armed anew (or stopped) does nothing.
   */
  private long clockRuns;
  private Watch watch;
  /**
   * Counts the watch openings started; only the latest may install its watch. Written on the timer
   * thread, read by the opener threads.
   */
  private volatile long openings;
  private volatile boolean closed;

  KubernetesObservation(
      KubernetesClient client, LeaseApi api, Scheduler timers, Executor watchOpener, Duration openingPatience,
      Observation observation) {
    this.client = client;
    this.api = api;
    this.timers = timers;
    this.watchOpener = watchOpener;
    this.openingPatience = openingPatience;
    this.observation = observation;
    this.objectName = KubernetesLeaseNames.objectName(observation.name());
  }

  @Override
  public void start() {
    timers.execute(() -> read(LeaseEvent.Type.CURRENT, ""));
  }

  /** Reads the object, reports it as {@code type} (with {@code detail}), then watches it. */
  private void read(LeaseEvent.Type type, String detail) {
    if (closed) {
      return;
    }
    api.get(objectName, READ_TIMEOUT).whenComplete((reply, error) -> timers.execute(() -> {
      if (closed) {
        return;
      }
      if (error != null || !(reply.ok() || reply.notFound())) {
        log.debug("observation of '{}': read failed ({}); trying again", observation.name(), error);
        timers.schedule(() -> read(type, detail), RETRY_NANOS);
        return;
      }
      Lease lease = reply.lease();
      Optional<LeaseHolding> now = lease == null ? Optional.empty() : holding(lease);
      emit(type, now, detail);
      reported = now;
      expired = false;
      takeIn(lease);
      transitions = transitionsOf(lease);
      openWatch();
    }));
  }

  private void openWatch() {
    stopWatching();
    if (watch != null) {
      watch.close();
      watch = null;
    }
    // From now, not from the read's resourceVersion: fabric8's mock API server takes that
    // parameter as a filter on the object's version. A watch from now starts with the object as
    // it is (an ADDED event), which handle() checks against what was reported, so a change
    // between the read and the watch is told; after a dropped connection fabric8 resumes from
    // the last resourceVersion it delivered.
    var options = new ListOptionsBuilder().build();
    long attempt = ++openings;
    // fabric8 opens the watch on its own threads; a blocking call kept off the timer thread.
    Watcher<Lease> self = this;
    Runnable open = () -> {
      if (closed || attempt != openings) {
        return; // given up on while it queued: a newer opening is under way
      }
      try {
        Watch w = client.resources(Lease.class).inNamespace(api.namespace()).withName(objectName)
            .watch(options, self);
        if (closed) {
          w.close(); // closed while opening; the timer thread may be gone already
          return;
        }
        timers.execute(() -> {
          if (closed || attempt != openings) {
            w.close(); // given up on while it opened: a newer opening replaced it
          } else {
            if (watch != null) {
              watch.close(); // two openings raced (a reopen and a close at once): keep the newer
            }
            watch = w;
            watching = true;
            armExpiry();
          }
        });
      } catch (RuntimeException e) {
        if (closed || attempt != openings) {
          return;
        }
        log.debug("observation of '{}': the watch could not be opened ({}); reading again",
            observation.name(), e.toString());
        timers.schedule(() -> read(LeaseEvent.Type.GAP, "kubernetes: the watch could not be opened; read again"), RETRY_NANOS);
      }
    };
    timers.schedule(() -> giveUpOnOpening(attempt), openingPatience.toNanos());
    try {
      watchOpener.execute(open);
    } catch (RejectedExecutionException e) {
      // The backend is closing: its opener is shut down, and this observation is being closed.
      log.debug("observation of '{}': no watch opened, the backend is closed", observation.name());
    }
  }

  /**
   * An opening that has not answered within {@link #OPENING_PATIENCE} is given up on and
   * another one started: fabric8 waits for an opening without a time limit, and until one is open
   * the observer hears nothing at all (no change, and no expiry, whose clock runs only while
   * watching). The one given up on closes its watch if it ever opens; if it is still queued, it
   * never starts.
   */
  private void giveUpOnOpening(long attempt) {
    if (closed || attempt != openings || watch != null) {
      return;
    }
    log.info("observation of '{}': the API server has not answered a watch request in {} s; asking again",
        observation.name(), openingPatience.toSeconds());
    openWatch();
  }

  @Override
  public void eventReceived(Action action, Lease lease) {
    timers.execute(() -> handle(action, lease));
  }

  private void handle(Action action, Lease lease) {
    if (closed || lease == null || lease.getMetadata() == null) {
      return;
    }
    // An event comes from an open watch (its first may arrive before watch() has returned).
    watching = true;
    takeIn(lease);
    Optional<LeaseHolding> before = expired ? Optional.<LeaseHolding>empty() : reported;
    if (action == Action.DELETED) {
      before.ifPresent(h -> emit(LeaseEvent.Type.REVOKED, before, "kubernetes: the Lease object was deleted"));
      reported = Optional.empty();
      expired = false;
      transitions = -1;
      armExpiry();
      return;
    }
    if (action != Action.ADDED && action != Action.MODIFIED) {
      return;
    }
    Optional<LeaseHolding> now = holding(lease);
    int was = transitions;
    transitions = transitionsOf(lease);
    // leaseTransitions grows by one with every new tenure (Leasehold's and client-go's), and by
    // nothing else: a difference that one step does not explain means changes were missed (or the
    // object was made anew unseen), which is a GAP, never a guess.
    // No object before: Leasehold creates it released (0) and its first tenure makes 1;
    // client-go creates it held with 0.
    int steps = was < 0 ? (now.isEmpty() ? 0 : transitions <= 1 ? 1 : transitions) : transitions - was;
    boolean explained = sameTenure(reported, now) ? steps == 0
        : now.isEmpty() ? steps == 0
        : steps == 1;
    if (!explained) {
      emit(LeaseEvent.Type.GAP, now, "kubernetes: leaseTransitions went from " + was + " to "
          + transitions + " unseen; read again");
      reported = now;
      expired = false;
      armExpiry();
      return;
    }
    if (now.isEmpty()) {
      before.ifPresent(h -> emit(LeaseEvent.Type.RELEASED, before, ""));
      reported = now;
      expired = false;
    } else if (sameTenure(reported, now)) {
      // A renewal (or a late write of a tenure already counted as expired: nothing new).
    } else if (before.isEmpty()) {
      emit(LeaseEvent.Type.ACQUIRED, now, "");
      reported = now;
      expired = false;
    } else {
      emit(LeaseEvent.Type.TAKEN_OVER, now, "kubernetes: another holder replaced the record");
      reported = now;
      expired = false;
    }
    armExpiry();
  }

  private void takeIn(Lease lease) {
    version = lease == null ? null : lease.getMetadata().getResourceVersion();
    durationSeconds = lease == null || lease.getSpec() == null ? null : lease.getSpec().getLeaseDurationSeconds();
  }

  /** The watch is gone or not yet open: no clock runs until one is. */
  private void stopWatching() {
    watching = false;
    clockRuns++;
    if (expiry != null) {
      expiry.cancel();
      expiry = null;
    }
  }

  /**
   * Counts the held object as expired once its version stayed, while watched, for its lease
   * duration.
   */
  private void armExpiry() {
    clockRuns++;
    if (expiry != null) {
      expiry.cancel();
      expiry = null;
    }
    if (!watching || version == null || reported.isEmpty() || expired) {
      return;
    }
    Integer seconds = durationSeconds;
    long nanos = TimeUnit.SECONDS.toNanos(seconds == null || seconds < 1 ? 1 : seconds);
    String seen = version;
    long run = clockRuns;
    expiry = timers.schedule(() -> confirmExpiry(run, seen, seconds, nanos, false, 0), nanos);
  }

  /**
   * Whether the clock armed as {@code run} still runs and nothing changed, as far as the watch
   * told, since it showed version {@code seen}.
   */
  private boolean unchangedSince(long run, String seen) {
    return run == clockRuns && !closed && watching && !expired && reported.isPresent() && Objects.equals(seen, version);
  }

  /**
   * The watch showed no change for the lease duration: asks the API server before saying {@code
   * EXPIRED}. A watch can deliver late (a loaded observer, a slow or cut connection) while the
   * holder renews in time, and silence on the observer's side is no evidence about the holder. A
   * contender takes the lease over by replacing exactly the version it waited on, so that version
   * still being the object's now is what makes the expiry real (and the holder, whose safe deadline
   * counts from before that version was written, has stopped by then).
   *
   * <p>A newer version on the server means the watch is behind: it gets another lease duration to
   * deliver it, then is opened again (a {@code GAP} with the object read anew) as a watch that no
   * longer delivers. A read that fails is tried again, after pauses doubling from 200 ms to 5 s
   * (an overloaded or refusing API server is not polled harder); meanwhile nothing is said.
   */
  private void confirmExpiry(long run, String seen, Integer seconds, long nanos, boolean watchWasBehind, int failures) {
    if (!unchangedSince(run, seen)) {
      return;
    }
    api.get(objectName, READ_TIMEOUT).whenComplete((reply, error) -> timers.execute(() -> {
      if (!unchangedSince(run, seen)) {
        return; // the watch delivered a change meanwhile, which re-armed the clock (or it stopped)
      }
      if (error != null || !(reply.ok() || reply.notFound())) {
        String why = error != null ? error.toString() : "HTTP " + reply.code();
        if (failures + 1 == CONFIRM_FAILURES_LOGGED) {
          log.info("observation of '{}': {} reads to confirm an expiry failed, the last: {}; still trying, and"
              + " saying nothing until one answers", observation.name(), failures + 1, why);
        } else {
          log.debug("observation of '{}': read to confirm an expiry failed ({}); trying again", observation.name(), why);
        }
        long pause = Math.min(RETRY_NANOS << Math.min(failures, 5), MAX_CONFIRM_PAUSE_NANOS);
        expiry = timers.schedule(() -> confirmExpiry(run, seen, seconds, nanos, watchWasBehind, failures + 1), pause);
        return;
      }
      Lease lease = reply.lease();
      String current = lease == null ? null : lease.getMetadata().getResourceVersion();
      if (seen.equals(current)) {
        expired = true;
        emit(LeaseEvent.Type.EXPIRED, reported,
            "kubernetes: not renewed for leaseDurationSeconds (" + seconds + " s)");
      } else if (!watchWasBehind) {
        log.debug("observation of '{}': the API server has version {}, the watch showed {}; waiting for the watch",
            observation.name(), current, seen);
        expiry = timers.schedule(() -> confirmExpiry(run, seen, seconds, nanos, true, 0), nanos);
      } else {
        log.info("observation of '{}': the watch has not delivered version {} for {} s after the API server had"
            + " it; opening it again", observation.name(), current, seconds);
        if (watch != null) {
          watch.close();
          watch = null;
        }
        stopWatching();
        read(LeaseEvent.Type.GAP, "kubernetes: the watch stopped delivering (the API server had version " + current
            + ", the watch still " + seen + "); read again");
      }
    }));
  }

  @Override
  public void onClose(WatcherException cause) {
    timers.execute(() -> {
      if (closed) {
        return;
      }
      log.debug("observation of '{}': the watch closed ({}); reading again", observation.name(), cause.toString());
      watch = null;
      stopWatching();
      read(LeaseEvent.Type.GAP, "kubernetes: the API server no longer had the changes since resourceVersion "
          + version + "; read again");
    });
  }

  @Override
  public void onClose() {
    // Closed by us.
  }

  private static int transitionsOf(Lease lease) {
    if (lease == null) {
      return -1;
    }
    Integer t = lease.getSpec() == null ? null : lease.getSpec().getLeaseTransitions();
    return t == null ? 0 : t;
  }

  private static boolean sameTenure(Optional<LeaseHolding> a, Optional<LeaseHolding> b) {
    return a.isPresent() && b.isPresent()
        && a.get().holder().equals(b.get().holder()) && a.get().token() == b.get().token();
  }

  /** The object's holding: its holder, the tenure's token (annotation), its acquire time. */
  static Optional<LeaseHolding> holding(Lease lease) {
    LeaseSpec spec = lease.getSpec();
    String holder = spec == null ? null : spec.getHolderIdentity();
    if (holder == null || holder.isEmpty()) {
      return Optional.empty();
    }
    Map<String, String> annotations = lease.getMetadata().getAnnotations();
    long token = 0;
    String recorded = annotations == null ? null : annotations.get(KubernetesLeaseStore.TOKEN_ANNOTATION);
    if (recorded != null) {
      try {
        token = Long.parseLong(recorded);
      } catch (NumberFormatException e) {
        token = 0;
      }
    }
    return Optional.of(new LeaseHolding(holder, token,
        Optional.ofNullable(spec.getAcquireTime()).map(t -> t.toInstant())));
  }

  private void emit(LeaseEvent.Type type, Optional<LeaseHolding> holding, String detail) {
    observation.emit(new LeaseEvent(type, observation.name(), holding, detail));
  }

  /** Ends the observation: the watch is closed and nothing more is reported. */
  @Override
  public void close() {
    closed = true;
    timers.execute(() -> {
      if (expiry != null) {
        expiry.cancel();
      }
      if (watch != null) {
        watch.close();
        watch = null;
      }
    });
  }
}
