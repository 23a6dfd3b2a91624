package io.leasehold.spi;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.Scheduler;
import io.leasehold.Subscription;
import io.leasehold.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The holder side of a lease, shared by every backend: it turns the three operations of a
 * {@link LeaseStore} into the whole {@link Lease} contract, and it is where the time-safety rule
 * lives.
 *
 * <p><b>How a tenure ends.</b> Each tenure ({@link Tenancy}) has one atomic field, its local safe
 * deadline. A renewal moves it forward by compare-and-set; whoever first finds it in the past (the
 * deadline timer, a renewal, or {@link #checkAlive()} itself) swaps it for a sentinel, and only the
 * winner of that swap reports the loss. So {@code checkAlive()} needs no lock and no flag from the
 * renewal thread, a loss is reported exactly once, and a tenure once seen dead never comes back.
 * {@code Tenancy} is that rule alone, small enough to check in one sitting; this class is the
 * rest: acquiring, renewing on a timer, releasing, and telling the handlers.
 *
 * <p><b>Life of a lease object</b> ({@link Phase}; {@link #phase()} says where it is):
 *
 * <pre>
 *            acquire()                 granted
 *   IDLE ─────────────────▶ ACQUIRING ─────────▶ HELD ──┐ renewals keep it HELD
 *    ▲  ▲   refused, timed out │                   │  ◀─┘
 *    │  └──────────────────────┘                   │ the deadline passes / the store ends it
 *    │  ◀──────────────────────────────────────────┘ a loss: IDLE at once, onLost
 *    │                                                   runs after, on the callback thread
 *    │                release() confirmed, or its deadline passed
 *    └──────────────────────────── RELEASING ◀────── HELD: release()
 *
 *   any phase ── close() ──▶ CLOSED (final: an acquire in progress fails, a tenure is released)
 * </pre>
 *
 * <p>Two calls may overlap, and the phase names the one the caller waits for: {@code release()}
 * during ACQUIRING waits for the acquire and then releases what it got (the phase stays
 * ACQUIRING until then); {@code acquire()} during RELEASING waits for the release to settle and
 * is ACQUIRING from the call. The phase is therefore derived from the guarded fields below
 * ({@code closed}, {@code acquiring}, {@code releasing}) and the current tenure, rather than kept
 * as a fifth field that could disagree with them.
 *
 * <p><b>Threads.</b> Timers run on the runtime's scheduler, loss handlers on its callback
 * executor, and store replies arrive on whatever thread the backend completes them. The internal
 * lock guards only bookkeeping; no store call, handler or future completion runs under it.
 */
public final class ManagedLease implements Lease {

  private static final Logger log = LoggerFactory.getLogger(ManagedLease.class);

  /** Where a lease object is in its life (the class Javadoc draws the transitions). */
  public enum Phase {
    /** Holds nothing and no call is in progress: before the first acquire, after a release or a loss. */
    IDLE,
    /** An {@code acquire()} is in progress (asking the store, or waiting for a release to settle). */
    ACQUIRING,
    /** A tenure is live: {@code checkAlive()} is true until its safe deadline. */
    HELD,
    /** A {@code release()} is in progress; the tenure is already not alive. */
    RELEASING,
    /** Closed: final. */
    CLOSED
  }

  private final LeaseSettings settings;
  private final HolderId holder;
  private final LeaseStore store;
  private final Ticker ticker;
  private final Scheduler timers;
  private final Executor callbacks;
  private final Consumer<ManagedLease> onClose;
  private final long windowNanos;
  private final long heartbeatNanos;
  private final long retryNanos;
  private final long timeoutNanos;
  /** Store calls with a timeout, and their failures mapped to the API's exceptions. */
  private final StoreCalls calls;
  private final List<Registration> handlers = new CopyOnWriteArrayList<>();
  /** Renewal observers (metrics); an array so the renewal path reads it without allocating. */
  private volatile RenewalListener[] renewalListeners = new RenewalListener[0];
  private final Object lock = new Object();

  /** The latest tenure, live or over; {@link Tenancy#NONE} before the first. */
  private volatile Tenancy current = Tenancy.NONE;

  /** The holder the store named in the last refused acquire(); null after a successful one. */
  private volatile String lastKnownHolder;

  // Guarded by lock.
  private boolean closed;
  /** The future of the acquire() call in progress, from the call until its answer. */
  private CompletableFuture<Boolean> acquiring;
  private Scheduler.Cancellable acquireRetry = Scheduler.Cancellable.NONE;
  private CompletableFuture<Void> releasing;
  private long lastRequestId;
  /** The highest token the store reported gone; a grant at or below it arrived too late. */
  private long lostUpTo = Long.MIN_VALUE;
  /**
   * Grants of the acquire() call in progress that it will not use, kept until the call answers:
   * a retry of the same request may still get the same tenure back, and must not find it released.
   */
  private final List<Tenure> unusedGrants = new ArrayList<>();

  /**
   * Makes a lease object with a fresh incarnation; it holds nothing until {@link #acquire()}.
   *
   * @param settings the lease's settings, already checked against the backend's limits
   * @param store the backend's store operations
   * @param runtime the backend's clock and threads
   * @param onClose called once when this lease is closed, so the backend can forget it
   */
  public ManagedLease(
      LeaseSettings settings,
      LeaseStore store,
      LeaseRuntime runtime,
      Consumer<ManagedLease> onClose) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.store = Objects.requireNonNull(store, "store");
    this.ticker = runtime.ticker();
    this.timers = runtime.timers();
    this.callbacks = runtime.callbacks();
    this.onClose = Objects.requireNonNull(onClose, "onClose");
    this.holder = HolderId.newIncarnation(settings.owner());
    this.windowNanos = settings.safeWindow().toNanos();
    this.heartbeatNanos = settings.heartbeatInterval().toNanos();
    this.retryNanos = settings.retryInterval().toNanos();
    this.timeoutNanos = settings.operationTimeout().toNanos();
    this.calls = new StoreCalls(timers, settings.name(), timeoutNanos);
  }

  @Override
  public String name() {
    return settings.name();
  }

  @Override
  public String owner() {
    return settings.owner();
  }

  @Override
  public HolderId holder() {
    return holder;
  }

  @Override
  public LeaseSettings settings() {
    return settings;
  }

  // ---------------------------------------------------------------------------------------------
  // The hot path: a volatile read of the tenure, a volatile read of its deadline, one clock read.

  @Override
  public boolean checkAlive() {
    return current.alive();
  }

  @Override
  public Duration remaining() {
    Tenancy t = current;
    if (!t.alive()) {
      return Duration.ZERO;
    }
    long d = t.deadline();
    long left = d == Tenancy.ENDED ? 0 : d - ticker.read();
    return left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
  }

  @Override
  public Optional<String> lastKnownHolder() {
    return Optional.ofNullable(lastKnownHolder);
  }

  @Override
  public OptionalLong fencingToken() {
    Tenancy t = current;
    return t.alive() ? OptionalLong.of(t.tenure.token()) : OptionalLong.empty();
  }


  // ---------------------------------------------------------------------------------------------
  // Acquire.

  @Override
  public CompletableFuture<Boolean> acquire() {
    CompletableFuture<Boolean> result;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(closedException());
      }
      if (acquiring != null) {
        return acquiring.copy();
      }
      // In progress from now until it answers, waiting included, so that a release() called
      // meanwhile waits for it and then releases what it got.
      result = acquiring = new CompletableFuture<>();
    }
    proceed(result);
    return result.copy();
  }

  /**
   * The next step of an acquire() call: wait for a release or for the handlers of the last loss,
   * confirm a live tenure, or start the attempts.
   */
  private void proceed(CompletableFuture<Boolean> result) {
    CompletableFuture<?> waitFor = null;
    Tenancy held = null;
    long requestId = 0;
    synchronized (lock) {
      if (closed || acquiring != result) {
        return; // close() answered it
      }
      Tenancy t = current;
      if (releasing != null) {
        waitFor = releasing;
      } else if (t.alive()) {
        held = t;
      } else if (!t.lossHandled.isDone() && t.notifying != Thread.currentThread()) {
        // A new tenure starts only after the handlers of the last loss ran, so that no handler
        // mistakes the new tenure's work for the old one's. A handler that acquires again does
        // not wait for itself.
        waitFor = t.lossHandled;
      } else {
        requestId = ++lastRequestId;
      }
    }
    if (waitFor != null) {
      waitFor.whenComplete((ignored, error) -> proceed(result));
    } else if (held != null) {
      confirm(held, result);
    } else {
      attempt(result, requestId, 0);
    }
  }

  /** Acquire while holding: one renewal round trip proves the tenure is still ours. */
  private void confirm(Tenancy t, CompletableFuture<Boolean> result) {
    renewNow(t, true)
        .whenComplete(
            (renewed, error) -> {
              if (error != null) {
                finishAcquire(
                    result,
                    null,
                    StoreCalls.leaseException(
                        error, "confirming lease '" + settings.name() + "' as " + holder
                            + " failed; it stays held until its safe deadline unless a renewal"
                            + " succeeds"));
              } else if (renewed) {
                finishAcquire(result, true, null);
              } else {
                proceed(result); // lost meanwhile: a fresh acquisition, after its handlers
              }
            });
  }

  /** Answers the acquire() call in progress, if {@code result} is still it. */
  private void finishAcquire(CompletableFuture<Boolean> result, Boolean value, Throwable error) {
    List<Tenure> unused;
    synchronized (lock) {
      if (acquiring == result) {
        acquiring = null;
      }
      unused = takeUnusedGrants();
    }
    if (error != null) {
      result.completeExceptionally(error);
    } else {
      result.complete(value);
    }
    unused.forEach(this::releaseQuietly);
  }

  private void attempt(CompletableFuture<Boolean> result, long requestId, int attemptNo) {
    synchronized (lock) {
      if (closed || acquiring != result) {
        return; // close() answered it
      }
    }
    long sent = ticker.read();
    AcquireRequest request =
        new AcquireRequest(
            settings.name(), holder, requestId, settings.ttl(), sent, settings.operationTimeout());
    calls.withTimeout(
            () -> store.acquire(request),
            timeoutNanos,
            "acquire",
            (answer, error) -> lateAnswer(request, answer))
        .whenComplete(
            calls.guarded(result, (answer, error) -> onAttempt(result, request, attemptNo, answer, error)));
  }

  /**
   * The store answered an attempt after the engine had given up on it. A grant is of no use now
   * and, left alone, would keep the name from everyone until it expired; so it goes back at once.
   */
  private void lateAnswer(AcquireRequest request, AcquireResult answer) {
    if (answer instanceof AcquireResult.Acquired granted) {
      log.info(
          "The store granted lease '{}' to {} (token {}) after the acquire attempt had timed out;"
              + " giving it back",
          settings.name(),
          holder,
          granted.token());
      giveBack(
          new Tenure(settings.name(), holder, request.requestId(), granted.token(), settings.ttl()));
    }
  }

  /**
   * Releases a grant this holder does not use, conditional on its token, so that it can never end
   * a newer tenure. While the acquire() call of its request id is still in progress, a retry of
   * that call may get the same tenure back and begin it: then the release waits until the call
   * answered, and is skipped if the tenure became the current one.
   */
  private void giveBack(Tenure grant) {
    synchronized (lock) {
      Tenure inUse = current.tenure;
      if (inUse != null && inUse.token() == grant.token()) {
        return; // a retry got this very tenure: it is the current one, live or already ended
      }
      if (!closed && acquiring != null && lastRequestId == grant.requestId()) {
        unusedGrants.add(grant);
        return;
      }
    }
    releaseQuietly(grant);
  }

  /** Takes the grants kept for the call that just answered, except the tenure it began. */
  private List<Tenure> takeUnusedGrants() {
    if (unusedGrants.isEmpty()) {
      return List.of();
    }
    Tenure inUse = current.tenure;
    List<Tenure> unused = new ArrayList<>();
    for (Tenure grant : unusedGrants) {
      if (inUse == null || inUse.token() != grant.token()) {
        unused.add(grant);
      }
    }
    unusedGrants.clear();
    return unused;
  }

  private void onAttempt(
      CompletableFuture<Boolean> result,
      AcquireRequest request,
      int attemptNo,
      AcquireResult answer,
      Throwable error) {
    Throwable failure = error != null || answer != null ? error : StoreCalls.noAnswer("acquire");
    if (answer instanceof AcquireResult.Acquired granted) {
      long sent = request.sentAtNanos();
      long deadline = earlier(sent, granted.validFromNanos()) + windowNanos;
      Tenure tenure =
          new Tenure(settings.name(), holder, request.requestId(), granted.token(), settings.ttl());
      failure = begin(result, tenure, sent, deadline);
      if (failure == null) {
        return;
      }
      giveBack(tenure); // of no use; released when the call answers, unless a retry begins it
    }
    // A refusal (no right on the name, a request the store calls invalid, a quota) is the same
    // for every retry: the caller hears of it at once rather than after the retries' wait.
    boolean refused = answer == null && StoreCalls.unwrap(failure) instanceof LeaseProtocolException;
    boolean closedNow;
    synchronized (lock) {
      closedNow = closed || acquiring != result;
      if (!closedNow && !refused && attemptNo < settings.acquireRetries()) {
        acquireRetry =
            timers.schedule(() -> attempt(result, request.requestId(), attemptNo + 1), retryNanos);
        return;
      }
    }
    // No answer at all: the store may have granted the request without this holder learning it.
    boolean outcomeUnknown = answer == null;
    if (closedNow) {
      if (outcomeUnknown) {
        abandonQuietly(request);
      }
      return; // close() answered it
    } else if (answer instanceof AcquireResult.HeldElsewhere elsewhere) {
      log.debug(
          "Lease '{}' is held by {}; {} does not hold it after {} attempt(s)",
          settings.name(),
          elsewhere.holder().isEmpty() ? "another holder" : elsewhere.holder(),
          holder,
          attemptNo + 1);
      lastKnownHolder = elsewhere.holder().isEmpty() ? null : elsewhere.holder();
      finishAcquire(result, false, null);
    } else {
      finishAcquire(
          result,
          null,
          StoreCalls.leaseException(
              failure,
              refused
                  ? "acquire of lease '" + settings.name() + "' as " + holder + " was refused (not retried)"
                  : "acquire of lease '" + settings.name() + "' as " + holder + " failed after "
                      + (attemptNo + 1) + " attempt(s); outcome unknown"));
      if (outcomeUnknown) {
        abandonQuietly(request);
      }
    }
  }

  /**
   * Starts a granted tenure and answers the acquire, or says why the grant is of no use: its
   * deadline already passed, or the store reported the tenure gone before its grant arrived. (The
   * caller may retry with the same request id, which the store treats as the same tenure.)
   *
   * @return {@code null} if the tenure started, else the failure of this attempt
   */
  private LeaseException begin(
      CompletableFuture<Boolean> result, Tenure tenure, long sent, long deadline) {
    long now = ticker.read();
    if (deadline - now <= 0) {
      return new LeaseTimeoutException(
          "the store granted lease '" + settings.name() + "' to " + holder + " but the answer came "
              + millis(now - sent) + " after sending, past the safe window of "
              + millis(windowNanos), null);
    }
    Tenancy t = new Tenancy(tenure, deadline, ticker, this::lost);
    boolean answeredByClose;
    synchronized (lock) {
      answeredByClose = closed || acquiring != result;
      if (!answeredByClose && tenure.token() <= lostUpTo) {
        return new LeaseStoreUnavailableException(
            "the store reported tenure " + tenure.token() + " of lease '" + settings.name()
                + "' gone before its grant arrived", null);
      }
      if (!answeredByClose) {
        current = t;
        t.renewTimer = timers.schedule(() -> renewDue(t), sent + heartbeatNanos - now);
        t.deadlineTimer = timers.schedule(() -> deadlineDue(t), deadline - now);
      }
    }
    if (answeredByClose) {
      releaseQuietly(tenure); // close() answered the acquire; give the grant back
      return null;
    }
    log.info(
        "Acquired lease '{}' as {} (token {}); safe for {}, renewing every {}",
        settings.name(),
        holder,
        tenure.token(),
        millis(deadline - now),
        millis(heartbeatNanos));
    lastKnownHolder = null;
    finishAcquire(result, true, null);
    return null;
  }

  // ---------------------------------------------------------------------------------------------
  // Renewal and the deadline timer.

  private void renewDue(Tenancy t) {
    if (current == t) {
      renewNow(t);
    }
  }

  /**
   * Renews {@code t} now, or joins the renewal already in flight. Completes {@code true} if
   * renewed, {@code false} if the tenure is over, exceptionally if the store did not answer.
   */
  private CompletableFuture<Boolean> renewNow(Tenancy t) {
    return renewNow(t, false);
  }

  /**
   * As {@link #renewNow(Tenancy)}; with {@code confirm} (acquire() while holding) it asks the
   * store through {@link LeaseStore#confirm} and does not join a renewal already in flight, whose
   * answer may reflect the store as it was before the call: it waits for that one, then asks.
   */
  private CompletableFuture<Boolean> renewNow(Tenancy t, boolean confirm) {
    CompletableFuture<Boolean> result;
    synchronized (lock) {
      if (t.renewal != null) {
        if (!confirm) {
          return t.renewal.copy();
        }
        return t.renewal.handle((ignored, error) -> null).thenCompose(ignored -> renewNow(t, true));
      }
      t.renewTimer.cancel();
      result = t.renewal = new CompletableFuture<>();
    }
    long sent = ticker.read();
    long d = t.deadline();
    if (d == Tenancy.ENDED || !t.alive()) {
      settleRenewal(t, result, false, null);
      return result.copy();
    }
    long timeout = Math.min(timeoutNanos, d - sent);
    calls.withTimeout(
            () -> confirm ? store.confirm(t.tenure, sent) : store.renew(t.tenure, sent),
            timeout,
            "renewal")
        .whenComplete(
            (answer, error) -> {
              try {
                onRenewal(t, result, sent, answer, error);
              } catch (RuntimeException | Error e) {
                log.error("Handling a renewal reply for lease '{}' failed", settings.name(), e);
                settleRenewal(t, result, null, e);
              }
            });
    return result.copy();
  }

  private void onRenewal(
      Tenancy t, CompletableFuture<Boolean> result, long sent, RenewResult answer, Throwable error) {
    if (answer instanceof RenewResult.Renewed renewed) {
      boolean extended = t.extendTo(earlier(sent, renewed.validFromNanos()) + windowNanos);
      int recovered;
      synchronized (lock) {
        recovered = t.failures.count();
        t.failures = Tenancy.RenewalFailures.NONE;
        if (extended && !t.isOver()) {
          t.renewTimer = timers.schedule(() -> renewDue(t), sent + heartbeatNanos - ticker.read());
        }
      }
      if (extended && recovered > 0) {
        log.info(
            "Renewal of lease '{}' (token {}) succeeded again after {} failed attempt(s)",
            settings.name(),
            t.tenure.token(),
            recovered);
      }
      settleRenewal(t, result, extended, null);
      tellRenewed(sent);
    } else if (answer instanceof RenewResult.Lost gone) {
      t.endByStore(gone.reason());
      settleRenewal(t, result, false, null);
    } else {
      Throwable cause = error != null ? error : StoreCalls.noAnswer("renewal");
      LeaseException failure =
          StoreCalls.leaseException(
              cause,
              "renewal of lease '" + settings.name() + "' (token " + t.tenure.token() + ") failed");
      int failures;
      synchronized (lock) {
        failures = t.failures.count() + 1;
        t.failures = new Tenancy.RenewalFailures(failures, StoreCalls.unwrap(cause).getMessage());
        if (!t.isOver()) {
          t.renewTimer = timers.schedule(() -> renewDue(t), retryNanos);
        }
      }
      if (failures == 1 && !t.isOver()) {
        log.warn(
            "Renewal of lease '{}' held as {} (token {}) failed: {}; retrying every {} until the"
                + " safe deadline in {}",
            settings.name(),
            holder,
            t.tenure.token(),
            StoreCalls.unwrap(cause).getMessage(),
            millis(retryNanos),
            millis(Math.max(0, t.deadline() - ticker.read())));
      }
      settleRenewal(t, result, null, failure);
      tellRenewalFailed(sent, StoreCalls.unwrap(cause));
    }
  }

  /**
   * Registers an observer of this lease's renewals (for metrics). Not for deciding anything: a
   * loss is reported by {@link #onLost}.
   *
   * @param listener called after each renewal's answer
   * @return a subscription that removes it
   */
  public Subscription onRenewal(RenewalListener listener) {
    Objects.requireNonNull(listener, "listener");
    synchronized (lock) {
      RenewalListener[] old = renewalListeners;
      RenewalListener[] grown = java.util.Arrays.copyOf(old, old.length + 1);
      grown[old.length] = listener;
      renewalListeners = grown;
    }
    return () -> {
      synchronized (lock) {
        renewalListeners =
            java.util.Arrays.stream(renewalListeners).filter(l -> l != listener).toArray(RenewalListener[]::new);
      }
    };
  }

  private void tellRenewed(long sent) {
    RenewalListener[] listeners = renewalListeners;
    if (listeners.length == 0) {
      return; // the common case: no clock read, no allocation
    }
    long latency = ticker.read() - sent;
    for (RenewalListener l : listeners) {
      try {
        l.renewed(latency);
      } catch (RuntimeException e) {
        log.debug("A renewal listener of lease '{}' threw", settings.name(), e);
      }
    }
  }

  private void tellRenewalFailed(long sent, Throwable cause) {
    RenewalListener[] listeners = renewalListeners;
    if (listeners.length == 0) {
      return;
    }
    long latency = ticker.read() - sent;
    for (RenewalListener l : listeners) {
      try {
        l.renewalFailed(latency, cause);
      } catch (RuntimeException e) {
        log.debug("A renewal listener of lease '{}' threw", settings.name(), e);
      }
    }
  }

  /** Ends a renewal round trip: clears it first, so whoever its answer wakes can start another. */
  private void settleRenewal(
      Tenancy t, CompletableFuture<Boolean> result, Boolean renewed, Throwable failure) {
    synchronized (lock) {
      if (t.renewal == result) {
        t.renewal = null;
      }
    }
    if (failure != null) {
      result.completeExceptionally(failure);
    } else {
      result.complete(renewed);
    }
  }

  private void deadlineDue(Tenancy t) {
    long d = t.deadline();
    if (d == Tenancy.ENDED || !t.alive()) {
      return;
    }
    synchronized (lock) {
      if (!t.isOver()) {
        t.deadlineTimer = timers.schedule(() -> deadlineDue(t), t.deadline() - ticker.read());
      }
    }
  }

  /**
   * Called exactly once per loss, by whoever ended the tenure; hands the rest to the callback
   * thread so that neither {@link #checkAlive()} nor the timer thread runs user code. After the
   * backend shut its callback thread down there is nobody left to tell.
   */
  private void lost(Tenancy t, LeaseLost reason) {
    try {
      // The handlers registered when the loss happened: one registered while the delivery waits
      // for the callback thread is not called for this loss (as Lease#onLost says).
      List<Registration> registered = List.copyOf(handlers);
      callbacks.execute(() -> notifyLoss(t, reason, registered));
    } catch (RejectedExecutionException shutDown) {
      t.lossHandled.complete(null);
    }
  }

  private void notifyLoss(Tenancy t, LeaseLost reason, List<Registration> registered) {
    synchronized (lock) {
      t.cancelTimers();
    }
    t.notifying = Thread.currentThread();
    log.warn(
        "Lost lease '{}' held as {} (token {}): {}; owner-only work must stop now",
        settings.name(),
        holder,
        t.tenure.token(),
        reason);
    try {
      for (Registration r : registered) {
        r.deliver(reason);
      }
    } finally {
      t.notifying = null;
      if (reason.kind() == LeaseLost.Kind.EXPIRED || reason.kind() == LeaseLost.Kind.REVOKED) {
        // Only now, after the handlers that stop the owner-only work returned: the release is
        // what lets the next holder in.
        // EXPIRED: the local deadline passed, often because this process was starved; the store
        // may still hold the record for the rest of the TTL, and that rest is the handlers'
        // margin. Releasing first would hand the name on while they still run. A handler that
        // blocks longer than the TTL only loses the early release: the store expires the record.
        // REVOKED: a store that keeps a revoked record as a tombstone, so that nobody else gets
        // the name before this holder stopped, frees the name once the holder releases exactly
        // that tenure. Elsewhere a no-op: a release is conditional on the tenure.
        releaseQuietly(t.tenure);
      }
      t.lossHandled.complete(null);
    }
  }

  /**
   * For backends whose store pushes events (a watch): reports that the store no longer holds the
   * tenure with this token. Ends that tenure if it is the current one; if its grant has not
   * arrived yet, the grant will be refused when it does.
   *
   * @param token the fencing token of the tenure the event is about
   * @param reason why it is gone
   */
  public void storeReportedLoss(long token, LeaseLost reason) {
    synchronized (lock) {
      // The event may overtake the grant's reply; remember it so that the grant is refused.
      if (token > lostUpTo) {
        lostUpTo = token;
      }
    }
    Tenancy t = current;
    if (t.tenure != null && t.tenure.token() == token) {
      t.endByStore(reason);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Attached keys.

  /** Longest attached key, in characters. */
  static final int MAX_KEY_LENGTH = 128;

  /** Longest attached value, in characters. */
  static final int MAX_VALUE_LENGTH = 4096;

  @Override
  public CompletableFuture<Void> attach(String key, String value) {
    if (!store.supportsAttach()) {
      throw new UnsupportedOperationException(
          "attached keys are not supported by the backend of lease '" + settings.name() + "' ("
              + store.getClass().getSimpleName() + ")");
    }
    checkAttached(key, value);
    Tenancy t = current;
    if (!t.alive()) {
      return CompletableFuture.failedFuture(notHeld(key, "this object does not hold it"));
    }
    Tenure tenure = t.tenure;
    return calls.withTimeout(() -> store.attach(tenure, key, value), "attach of key '" + key + "'")
        .handle(
            (written, error) -> {
              if (error != null) {
                throw new CompletionException(
                    StoreCalls.leaseException(
                        error,
                        "attach of key '" + key + "' to lease '" + settings.name() + "' (token "
                            + tenure.token() + ") was not confirmed; if it landed, it ends with"
                            + " the tenure"));
              }
              if (!written) {
                throw new CompletionException(
                    notHeld(key, "the store no longer has tenure " + tenure.token()));
              }
              return null;
            });
  }

  private IllegalStateException notHeld(String key, String why) {
    return new IllegalStateException(
        "cannot attach key '" + key + "' to lease '" + settings.name() + "': " + why
            + "; nothing was written");
  }

  private static void checkAttached(String key, String value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
      throw new IllegalArgumentException(
          "attached key must be 1 to " + MAX_KEY_LENGTH + " characters; was " + key.length());
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-')) {
        throw new IllegalArgumentException(
            "attached key may contain only A-Z a-z 0-9 . _ -; found '" + c + "' at index " + i
                + " of '" + key + "'");
      }
    }
    if (value.length() > MAX_VALUE_LENGTH) {
      throw new IllegalArgumentException(
          "attached value must be at most " + MAX_VALUE_LENGTH + " characters; was "
              + value.length());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Release and close.

  @Override
  public CompletableFuture<Void> release() {
    CompletableFuture<?> waitFor;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.completedFuture(null);
      }
      if (releasing != null) {
        return releasing.copy();
      }
      waitFor = acquiring;
    }
    if (waitFor != null) {
      return waitFor.handle((ignored, error) -> null).thenCompose(ignored -> release());
    }
    return releaseCurrent();
  }

  private CompletableFuture<Void> releaseCurrent() {
    Tenancy t;
    long deadline;
    CompletableFuture<Void> result;
    synchronized (lock) {
      if (releasing != null) {
        return releasing.copy();
      }
      t = current;
      deadline = t.endVoluntarily();
      if (deadline == Tenancy.ENDED) {
        return CompletableFuture.completedFuture(null);
      }
      t.cancelTimers();
      result = releasing = new CompletableFuture<>();
    }
    releaseAttempt(t.tenure, deadline, result);
    return result.copy();
  }

  /** Retries until the store confirms or the old deadline passes; after that the TTL takes over. */
  private void releaseAttempt(Tenure tenure, long deadline, CompletableFuture<Void> result) {
    calls.withTimeout(() -> store.release(tenure), "release")
        .whenComplete(
            calls.guarded(result, (ok, error) -> {
              if (error == null) {
                log.info(
                    "Released lease '{}' held as {} (token {})",
                    settings.name(),
                    holder,
                    tenure.token());
                settleRelease(result, null);
              } else if (ticker.read() + retryNanos - deadline < 0) {
                timers.schedule(() -> releaseAttempt(tenure, deadline, result), retryNanos);
              } else {
                LeaseException failure =
                    StoreCalls.leaseException(
                        error,
                        "release of lease '" + settings.name() + "' (token " + tenure.token()
                            + ") was not confirmed before the safe deadline; the store lets it"
                            + " expire within the TTL of " + millis(tenure.ttl().toNanos()));
                log.warn("{}", failure.getMessage());
                settleRelease(result, failure);
              }
            }));
  }

  private void settleRelease(CompletableFuture<Void> result, Throwable failure) {
    synchronized (lock) {
      if (releasing == result) {
        releasing = null;
      }
    }
    if (failure == null) {
      result.complete(null);
    } else {
      result.completeExceptionally(failure);
    }
  }

  /**
   * Best effort, one attempt: asks the store to end a record that {@code request}, given up on
   * without an answer, may have made. If the store cannot be reached, the record expires with its
   * TTL: the backend keeps nothing alive for it.
   */
  private void abandonQuietly(AcquireRequest request) {
    log.debug(
        "Gave up on acquiring lease '{}' as {} (request {}) without an answer; asking the store to"
            + " drop a record it may have made",
        settings.name(),
        holder,
        request.requestId());
    calls.withTimeout(() -> store.abandon(request), "abandon")
        .whenComplete(
            (ok, error) -> {
              if (error != null) {
                log.debug(
                    "Could not abandon request {} of lease '{}'; a record it made expires with"
                        + " its TTL: {}",
                    request.requestId(),
                    settings.name(),
                    error.toString());
              }
            });
  }

  /** Best effort, one attempt: ends a tenure we no longer use, conditional on its token. */
  private void releaseQuietly(Tenure tenure) {
    calls.withTimeout(() -> store.release(tenure), "release")
        .whenComplete(
            (ok, error) -> {
              if (error != null) {
                log.debug(
                    "Could not end abandoned tenure {} of lease '{}'; the store expires it: {}",
                    tenure.token(),
                    settings.name(),
                    error.toString());
              }
            });
  }

  @Override
  public void close() {
    CompletableFuture<Void> done = closeAsync();
    try {
      done.get(timeoutNanos, TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      log.warn(
          "Closed lease '{}' held as {} without the store's confirmation of the release;"
              + " the store lets it expire within the TTL: {}",
          settings.name(),
          holder,
          e instanceof ExecutionException ? e.getCause().getMessage() : "no answer in time");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Closes without waiting: stops acquiring, releases what is held, detaches from the backend.
   *
   * @return completes when the release has settled
   */
  CompletableFuture<Void> closeAsync() {
    CompletableFuture<Boolean> pendingAcquire;
    CompletableFuture<Void> pendingRelease;
    List<Tenure> unused;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.completedFuture(null);
      }
      closed = true;
      acquireRetry.cancel();
      pendingAcquire = acquiring;
      pendingRelease = releasing;
      if (pendingAcquire != null) {
        acquiring = null;
      }
      unused = takeUnusedGrants();
    }
    if (pendingAcquire != null) {
      pendingAcquire.completeExceptionally(closedException());
    }
    unused.forEach(this::releaseQuietly);
    // Handlers stay registered: a loss found by this close, or found just before it and not yet
    // delivered, is still reported.
    CompletableFuture<?> before =
        pendingRelease != null ? pendingRelease : CompletableFuture.completedFuture(null);
    CompletableFuture<Void> done =
        before.handle((ignored, error) -> null).thenCompose(ignored -> releaseCurrent());
    return done.whenComplete(
        (ignored, error) -> {
          synchronized (lock) {
            current.cancelTimers();
          }
          onClose.accept(this);
        });
  }

  /**
   * For a backend that shuts down before a release settled: answers what is still pending, since
   * the threads that would have answered it are gone. The store lets the tenure expire.
   */
  void abandon() {
    CompletableFuture<Void> pendingRelease;
    synchronized (lock) {
      closed = true;
      pendingRelease = releasing;
      releasing = null;
      current.cancelTimers();
    }
    if (pendingRelease != null) {
      pendingRelease.completeExceptionally(
          new LeaseTimeoutException(
              "the backend closed before the store confirmed the release of lease '"
                  + settings.name() + "'; the store lets it expire within the TTL", null));
    }
    current.lossHandled.complete(null);
    onClose.accept(this);
  }

  // ---------------------------------------------------------------------------------------------
  // Handlers.

  @Override
  public Subscription onLost(Consumer<LeaseLost> handler) {
    Objects.requireNonNull(handler, "handler");
    Registration r = new Registration(handler);
    handlers.add(r);
    return () -> {
      r.active = false;
      handlers.remove(r);
    };
  }

  private final class Registration {
    private final Consumer<LeaseLost> handler;
    private volatile boolean active = true;

    Registration(Consumer<LeaseLost> handler) {
      this.handler = handler;
    }

    void deliver(LeaseLost reason) {
      if (!active) {
        return;
      }
      try {
        handler.accept(reason);
      } catch (RuntimeException | Error e) {
        log.error(
            "An onLost handler of lease '{}' threw; the other handlers still run", settings.name(),
            e);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers.

  /** The earlier of two ticker readings (compared by subtraction, as the ticker requires). */
  private static long earlier(long a, long b) {
    return b - a < 0 ? b : a;
  }

  private IllegalStateException closedException() {
    return new IllegalStateException(
        "lease '" + settings.name() + "' of " + holder + " is closed; make a new one");
  }

  private static String millis(long nanos) {
    return StoreCalls.millis(nanos);
  }

  /**
   * {@return where this lease object is in its life} A snapshot: another thread may move it on.
   * For logs, diagnostics and tests; safety decisions use {@link #checkAlive()}.
   */
  public Phase phase() {
    synchronized (lock) {
      if (closed) {
        return Phase.CLOSED;
      }
      if (acquiring != null) {
        return Phase.ACQUIRING;
      }
      if (releasing != null) {
        return Phase.RELEASING;
      }
      return current.alive() ? Phase.HELD : Phase.IDLE;
    }
  }

  @Override
  public String toString() {
    Tenancy t = current;
    return "Lease{name='" + settings.name() + "', holder=" + holder + ", " + phase()
        + (t.alive() ? ", token=" + t.tenure.token() + ", remaining=" + remaining() : "")
        + '}';
  }

}
