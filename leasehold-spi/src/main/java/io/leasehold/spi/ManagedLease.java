package io.leasehold.spi;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.Subscription;
import io.leasehold.Ticker;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
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
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The holder side of a lease, shared by every backend: it turns the three operations of a
 * {@link LeaseStore} into the whole {@link Lease} contract, and it is where the time-safety rule
 * lives.
 *
 * <p><b>How a tenure ends.</b> Each tenure has one atomic field, its local safe deadline. A
 * renewal moves it forward by compare-and-set; whoever first finds it in the past (the deadline
 * timer, a renewal, or {@link #checkAlive()} itself) swaps it for a sentinel, and only the winner
 * of that swap reports the loss. So {@code checkAlive()} needs no lock and no flag from the renewal
 * thread, a loss is reported exactly once, and a tenure once seen dead never comes back.
 *
 * <p><b>Threads.</b> Timers run on the runtime's scheduler, loss handlers on its callback
 * executor, and store replies arrive on whatever thread the backend completes them. The internal
 * lock guards only bookkeeping; no store call, handler or future completion runs under it.
 */
public final class ManagedLease implements Lease {

  private static final Logger log = LoggerFactory.getLogger(ManagedLease.class);

  /** Deadline value of a tenure that is over. No real ticker reading is ever exactly this. */
  private static final long ENDED = Long.MIN_VALUE;

  private static final VarHandle DEADLINE;

  static {
    try {
      DEADLINE =
          MethodHandles.lookup().findVarHandle(Tenancy.class, "deadline", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
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
  private final List<Registration> handlers = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();

  /** The latest tenure, live or over; {@link Tenancy#NONE} before the first. */
  private volatile Tenancy current = Tenancy.NONE;

  // Guarded by lock.
  private boolean closed;
  private CompletableFuture<Boolean> acquiring;
  private Scheduler.Cancellable acquireRetry = Scheduler.Cancellable.NONE;
  private CompletableFuture<Void> releasing;
  private long lastRequestId;

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
    return alive(current);
  }

  @Override
  public Duration remaining() {
    Tenancy t = current;
    if (!alive(t)) {
      return Duration.ZERO;
    }
    long d = t.deadline;
    long left = d == ENDED ? 0 : d - ticker.read();
    return left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
  }

  @Override
  public OptionalLong fencingToken() {
    Tenancy t = current;
    return alive(t) ? OptionalLong.of(t.tenure.token()) : OptionalLong.empty();
  }

  /**
   * Whether {@code t} is live now. If its deadline has passed, ends it and reports the loss; a
   * {@code false} answer is therefore final for that tenure.
   */
  private boolean alive(Tenancy t) {
    for (; ; ) {
      long d = t.deadline;
      if (d == ENDED) {
        return false;
      }
      if (d - ticker.read() > 0) {
        return true;
      }
      if (DEADLINE.compareAndSet(t, d, ENDED)) {
        lost(t, expiredReason(t));
        return false;
      }
    }
  }

  /** Moves {@code t}'s deadline to {@code newDeadline} unless it is over or already past. */
  private boolean extend(Tenancy t, long newDeadline) {
    for (; ; ) {
      long d = t.deadline;
      if (d == ENDED || !alive(t)) {
        return false;
      }
      long next = newDeadline - d > 0 ? newDeadline : d;
      if (DEADLINE.compareAndSet(t, d, next == ENDED ? next - 1 : next)) {
        return true;
      }
    }
  }

  /** Ends {@code t} because the store said so; reports the loss if {@code t} was still live. */
  private void endByStore(Tenancy t, LeaseLost reason) {
    for (; ; ) {
      long d = t.deadline;
      if (d == ENDED) {
        return;
      }
      if (DEADLINE.compareAndSet(t, d, ENDED)) {
        lost(t, reason);
        return;
      }
    }
  }

  /**
   * Ends a live {@code t} on the holder's own request.
   *
   * @return the deadline it had, or {@link #ENDED} if it was not live (a passed deadline is
   *     reported as a loss, never swallowed by the release)
   */
  private long endVoluntarily(Tenancy t) {
    for (; ; ) {
      long d = t.deadline;
      if (d == ENDED || !alive(t)) {
        return ENDED;
      }
      if (DEADLINE.compareAndSet(t, d, ENDED)) {
        t.lossHandled.complete(null);
        return d;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire.

  @Override
  public CompletableFuture<Boolean> acquire() {
    CompletableFuture<?> waitFor = null;
    Tenancy held = null;
    CompletableFuture<Boolean> attempt;
    long requestId;
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(closedException());
      }
      if (acquiring != null) {
        return acquiring.copy();
      }
      Tenancy t = current;
      if (releasing != null) {
        waitFor = releasing;
      } else if (alive(t)) {
        held = t;
      } else if (!t.lossHandled.isDone()) {
        // A new tenure starts only after the handlers of the last loss ran, so no handler can
        // mistake the new tenure's work for the old one's.
        waitFor = t.lossHandled;
      }
      if (waitFor != null || held != null) {
        attempt = null;
        requestId = 0;
      } else {
        attempt = acquiring = new CompletableFuture<>();
        requestId = ++lastRequestId;
      }
    }
    if (waitFor != null) {
      return waitFor.handle((ignored, error) -> null).thenCompose(ignored -> acquire());
    }
    if (held != null) {
      return confirm(held);
    }
    attempt(attempt, requestId, 0);
    return attempt.copy();
  }

  /** Acquire while holding: one renewal round trip proves the tenure is still ours. */
  private CompletableFuture<Boolean> confirm(Tenancy t) {
    return renewNow(t)
        .thenCompose(renewed -> renewed ? CompletableFuture.completedFuture(true) : acquire());
  }

  private void attempt(CompletableFuture<Boolean> result, long requestId, int attemptNo) {
    synchronized (lock) {
      if (closed) {
        acquiring = null;
        result.completeExceptionally(closedException());
        return;
      }
    }
    long sent = ticker.read();
    AcquireRequest request =
        new AcquireRequest(settings.name(), holder, requestId, settings.ttl(), sent);
    withTimeout(() -> store.acquire(request), "acquire")
        .whenComplete((answer, error) -> onAttempt(result, request, attemptNo, answer, error));
  }

  private void onAttempt(
      CompletableFuture<Boolean> result,
      AcquireRequest request,
      int attemptNo,
      AcquireResult answer,
      Throwable error) {
    Throwable failure = error;
    Tenure lateGrant = null;
    if (answer instanceof AcquireResult.Acquired granted) {
      long sent = request.sentAtNanos();
      long deadline = earlier(sent, granted.validFromNanos()) + windowNanos;
      Tenure tenure =
          new Tenure(settings.name(), holder, request.requestId(), granted.token(), settings.ttl());
      if (begin(result, tenure, sent, deadline)) {
        return;
      }
      lateGrant = tenure;
      failure =
          new LeaseTimeoutException(
              "the store granted lease '" + settings.name() + "' to " + holder
                  + " but the answer came " + millis(ticker.read() - sent)
                  + " after sending, past the safe window of " + millis(windowNanos), null);
    }
    boolean closedNow;
    synchronized (lock) {
      closedNow = closed;
      if (!closedNow && attemptNo < settings.acquireRetries()) {
        acquireRetry =
            timers.schedule(() -> attempt(result, request.requestId(), attemptNo + 1), retryNanos);
        return;
      }
      acquiring = null;
    }
    if (lateGrant != null) {
      releaseQuietly(lateGrant);
    }
    if (closedNow) {
      result.completeExceptionally(closedException());
    } else if (answer instanceof AcquireResult.HeldElsewhere elsewhere) {
      log.debug(
          "Lease '{}' is held by {}; {} does not hold it after {} attempt(s)",
          settings.name(),
          elsewhere.holder().isEmpty() ? "another holder" : elsewhere.holder(),
          holder,
          attemptNo + 1);
      result.complete(false);
    } else {
      result.completeExceptionally(
          leaseException(
              failure,
              "acquire of lease '" + settings.name() + "' as " + holder + " failed after "
                  + (attemptNo + 1) + " attempt(s); outcome unknown"));
    }
  }

  /**
   * Starts a granted tenure; false if its deadline already passed, so the grant is of no use
   * (the caller may retry with the same request id, which the store treats as the same tenure).
   */
  private boolean begin(CompletableFuture<Boolean> result, Tenure tenure, long sent, long deadline) {
    long now = ticker.read();
    if (deadline - now <= 0) {
      return false;
    }
    Tenancy t = new Tenancy(tenure, deadline == ENDED ? deadline - 1 : deadline);
    boolean closedNow;
    synchronized (lock) {
      acquiring = null;
      closedNow = closed;
      if (!closedNow) {
        current = t;
        t.renewTimer = timers.schedule(() -> renewDue(t), sent + heartbeatNanos - now);
        t.deadlineTimer = timers.schedule(() -> deadlineDue(t), deadline - now);
      }
    }
    if (closedNow) {
      releaseQuietly(tenure);
      result.completeExceptionally(closedException());
      return true;
    }
    log.info(
        "Acquired lease '{}' as {} (token {}); safe for {}, renewing every {}",
        settings.name(),
        holder,
        tenure.token(),
        millis(deadline - now),
        millis(heartbeatNanos));
    result.complete(true);
    return true;
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
    CompletableFuture<Boolean> result;
    synchronized (lock) {
      if (t.renewal != null) {
        return t.renewal.copy();
      }
      t.renewTimer.cancel();
      result = t.renewal = new CompletableFuture<>();
    }
    long sent = ticker.read();
    long d = t.deadline;
    if (d == ENDED || !alive(t)) {
      settleRenewal(t, result, false);
      return result.copy();
    }
    long timeout = Math.min(timeoutNanos, d - sent);
    withTimeout(() -> store.renew(t.tenure, sent), timeout, "renewal")
        .whenComplete((answer, error) -> onRenewal(t, result, sent, answer, error));
    return result.copy();
  }

  private void onRenewal(
      Tenancy t, CompletableFuture<Boolean> result, long sent, RenewResult answer, Throwable error) {
    if (answer instanceof RenewResult.Renewed renewed) {
      boolean extended = extend(t, earlier(sent, renewed.validFromNanos()) + windowNanos);
      int recovered;
      synchronized (lock) {
        t.renewal = null;
        recovered = t.failedRenewals;
        t.failedRenewals = 0;
        if (extended) {
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
      result.complete(extended);
    } else if (answer instanceof RenewResult.Lost gone) {
      endByStore(t, gone.reason());
      settleRenewal(t, result, false);
    } else {
      LeaseException failure =
          leaseException(
              error,
              "renewal of lease '" + settings.name() + "' (token " + t.tenure.token() + ") failed");
      int failures;
      synchronized (lock) {
        t.renewal = null;
        failures = t.failedRenewals + 1;
        t.failedRenewals = failures;
        t.lastFailure = failure;
        if (t.deadline != ENDED) {
          t.renewTimer = timers.schedule(() -> renewDue(t), retryNanos);
        }
      }
      if (failures == 1 && t.deadline != ENDED) {
        log.warn(
            "Renewal of lease '{}' held as {} (token {}) failed: {}; retrying every {} until the"
                + " safe deadline in {}",
            settings.name(),
            holder,
            t.tenure.token(),
            unwrap(error).getMessage(),
            millis(retryNanos),
            millis(Math.max(0, t.deadline - ticker.read())));
      }
      result.completeExceptionally(failure);
    }
  }

  private void settleRenewal(Tenancy t, CompletableFuture<Boolean> result, boolean renewed) {
    synchronized (lock) {
      t.renewal = null;
    }
    result.complete(renewed);
  }

  private void deadlineDue(Tenancy t) {
    long d = t.deadline;
    if (d == ENDED || !alive(t)) {
      return;
    }
    synchronized (lock) {
      if (t.deadline != ENDED) {
        t.deadlineTimer = timers.schedule(() -> deadlineDue(t), t.deadline - ticker.read());
      }
    }
  }

  /**
   * Called exactly once per loss, by whoever ended the tenure; hands the rest to the callback
   * thread so that neither {@link #checkAlive()} nor the timer thread runs user code.
   */
  private void lost(Tenancy t, LeaseLost reason) {
    try {
      callbacks.execute(() -> notifyLoss(t, reason));
    } catch (RejectedExecutionException shutDown) {
      t.lossHandled.complete(null);
    }
  }

  private void notifyLoss(Tenancy t, LeaseLost reason) {
    synchronized (lock) {
      t.cancelTimers();
    }
    log.warn(
        "Lost lease '{}' held as {} (token {}): {}; owner-only work must stop now",
        settings.name(),
        holder,
        t.tenure.token(),
        reason);
    if (reason.kind() == LeaseLost.Kind.EXPIRED) {
      // The store may still hold the record; ending it lets the next holder in before the TTL.
      releaseQuietly(t.tenure);
    }
    try {
      for (Registration r : handlers) {
        r.deliver(reason);
      }
    } finally {
      t.lossHandled.complete(null);
    }
  }

  private static LeaseLost expiredReason(Tenancy t) {
    LeaseException last = t.lastFailure;
    int failures = t.failedRenewals;
    String detail =
        "the local safe deadline passed without a successful renewal"
            + (failures > 0
                ? " (" + failures + " failed attempt(s); the last: "
                    + unwrap(last.getCause() != null ? last.getCause() : last).getMessage() + ")"
                : " (the renewal did not run in time: was the process paused or starved?)");
    return new LeaseLost(LeaseLost.Kind.EXPIRED, detail);
  }

  /**
   * For backends whose store pushes events (a watch): reports that the store no longer holds the
   * tenure with this token. Ignored unless that tenure is the current one and still live.
   *
   * @param token the fencing token of the tenure the event is about
   * @param reason why it is gone
   */
  public void storeReportedLoss(long token, LeaseLost reason) {
    Tenancy t = current;
    if (t.tenure != null && t.tenure.token() == token) {
      endByStore(t, reason);
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
      deadline = endVoluntarily(t);
      if (deadline == ENDED) {
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
    withTimeout(() -> store.release(tenure), "release")
        .whenComplete(
            (ok, error) -> {
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
                    leaseException(
                        error,
                        "release of lease '" + settings.name() + "' (token " + tenure.token()
                            + ") was not confirmed before the safe deadline; the store lets it"
                            + " expire within the TTL of " + millis(tenure.ttl().toNanos()));
                log.warn("{}", failure.getMessage());
                settleRelease(result, failure);
              }
            });
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

  /** Best effort, one attempt: ends a tenure we no longer use, conditional on its token. */
  private void releaseQuietly(Tenure tenure) {
    withTimeout(() -> store.release(tenure), "release")
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
    }
    if (pendingAcquire != null) {
      pendingAcquire.completeExceptionally(closedException());
    }
    CompletableFuture<?> before =
        pendingRelease != null ? pendingRelease : CompletableFuture.completedFuture(null);
    CompletableFuture<Void> done =
        before.handle((ignored, error) -> null).thenCompose(ignored -> releaseCurrent());
    return done.whenComplete(
        (ignored, error) -> {
          synchronized (lock) {
            current.cancelTimers();
          }
          handlers.clear();
          onClose.accept(this);
        });
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

  private <T> CompletableFuture<T> withTimeout(Supplier<CompletableFuture<T>> call, String what) {
    return withTimeout(call, timeoutNanos, what);
  }

  /** Runs a store call with a timeout on the runtime's clock (virtual in tests). */
  private <T> CompletableFuture<T> withTimeout(
      Supplier<CompletableFuture<T>> call, long timeout, String what) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Scheduler.Cancellable timer =
        timers.schedule(
            () ->
                result.completeExceptionally(
                    new LeaseTimeoutException(
                        "the store did not answer the " + what + " within " + millis(timeout),
                        null)),
            timeout);
    CompletableFuture<T> pending;
    try {
      pending = Objects.requireNonNull(call.get(), "the backend returned no future");
    } catch (RuntimeException e) {
      pending = CompletableFuture.failedFuture(e);
    }
    pending.whenComplete(
        (value, error) -> {
          timer.cancel();
          if (error != null) {
            result.completeExceptionally(unwrap(error));
          } else {
            result.complete(value);
          }
        });
    return result;
  }

  private static LeaseException leaseException(Throwable error, String context) {
    Throwable cause = unwrap(error);
    if (cause instanceof LeaseTimeoutException) {
      return new LeaseTimeoutException(context + ": " + cause.getMessage(), cause);
    }
    if (cause instanceof LeaseException le) {
      return new LeaseException(le.code(), context + ": " + cause.getMessage(), cause);
    }
    return new LeaseStoreUnavailableException(context + ": " + cause, cause);
  }

  private static Throwable unwrap(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /** The earlier of two ticker readings (compared by subtraction, as the ticker requires). */
  private static long earlier(long a, long b) {
    return b - a < 0 ? b : a;
  }

  private IllegalStateException closedException() {
    return new IllegalStateException(
        "lease '" + settings.name() + "' of " + holder + " is closed; make a new one");
  }

  private static String millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
  }

  @Override
  public String toString() {
    Tenancy t = current;
    return "Lease{name='" + settings.name() + "', holder=" + holder
        + (alive(t) ? ", token=" + t.tenure.token() + ", remaining=" + remaining() : ", not held")
        + '}';
  }

  /** One tenure as this holder lives it: the store's {@link Tenure} plus its local deadline. */
  private static final class Tenancy {
    static final Tenancy NONE = new Tenancy(null, ENDED);

    final Tenure tenure;

    /** The local safe deadline on the ticker, or {@link #ENDED}; changed only by CAS. */
    @SuppressWarnings("unused") // accessed through DEADLINE as well
    volatile long deadline;

    /** Completes once the handlers of this tenure's loss ran, or at once if it ended otherwise. */
    final CompletableFuture<Void> lossHandled = new CompletableFuture<>();

    // Guarded by ManagedLease.lock.
    Scheduler.Cancellable renewTimer = Scheduler.Cancellable.NONE;
    Scheduler.Cancellable deadlineTimer = Scheduler.Cancellable.NONE;
    CompletableFuture<Boolean> renewal;

    // Written under ManagedLease.lock; volatile so that a loss found by checkAlive can say why
    // without taking the lock.
    volatile int failedRenewals;
    volatile LeaseException lastFailure;

    Tenancy(Tenure tenure, long deadline) {
      this.tenure = tenure;
      this.deadline = deadline;
      if (tenure == null) {
        lossHandled.complete(null);
      }
    }

    void cancelTimers() {
      renewTimer.cancel();
      deadlineTimer.cancel();
    }
  }
}
