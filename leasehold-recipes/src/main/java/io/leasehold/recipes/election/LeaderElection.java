package io.leasehold.recipes.election;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseLost;
import io.leasehold.Scheduler;
import io.leasehold.Subscription;
import io.leasehold.recipes.election.LeadershipListener.Why;
import io.leasehold.recipes.fencing.FencingGuard;
import io.leasehold.recipes.internal.SharedScheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A singleton: of all the processes that run an election for the same lease, at most one runs the
 * leader-only {@link LeaderWork} at a time.
 *
 * <p>Once {@linkplain #start() started}, the election tries to acquire the lease, backing off
 * exponentially with jitter while another process holds it or the store cannot be reached. When it
 * holds the lease it runs the work on its own thread. When the lease is lost it interrupts that
 * thread at once, from the lease's {@link Lease#onLost} handler, and waits for nothing; once the
 * work has ended it contends again. When the work returns by itself, the lease is released and the
 * election contends again. {@link #close()} interrupts the work, waits for it to end, then
 * releases the lease.
 *
 * <pre>{@code
 * try (LeaderElection election =
 *     LeaderElection.builder(lease, ctx -> {
 *           while (ctx.isLeader()) {
 *             compactNextBatch(ctx.fencingToken());     // the resource checks the token
 *           }
 *         })
 *         .listener(new LeadershipListener() {
 *           public void startedLeading(long token) { log.info("leading with token {}", token); }
 *         })
 *         .start()) {
 *   awaitShutdown();
 * }
 * }</pre>
 *
 * <p><b>What it promises.</b> A term's work starts only after the lease was acquired, and a new
 * term starts only after the previous term's work has ended, so one process never runs two works.
 * Across processes, the lease's time-safety rule stops the old leader first: its work is
 * interrupted when its local safe deadline passes, a safety margin before the store can give the
 * lease to anyone else, so the work must stop within that margin. Work that ignores interruption,
 * or a process paused longer than the TTL, can still act late: pass the {@linkplain
 * LeaderContext#fencingToken() fencing token} to the resource (see {@link FencingGuard}).
 *
 * <p><b>Told, not polling.</b> Given the backend the lease was made by ({@link
 * Builder#observing(LeaseBackend)}), a follower that was refused {@linkplain
 * LeaseBackend#observe observes} the lease and contends again as soon as it frees (released,
 * expired, revoked), after a small random delay (up to a quarter of the lease's retry interval,
 * at most 125 ms) so that the followers do not all ask at once; its backoff retry stays as the
 * fallback, for a watch that went silent or a backend that cannot observe. {@link
 * #currentLeader()} tells followers who leads. The observation is cancelled when this process wins or the election closes.
 *
 * <p>The election neither opens nor closes the lease; it registers one {@code onLost} handler and
 * removes it on close. Use one lease object per election.
 */
public final class LeaderElection implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

  /** The jitter after a free event is up to a quarter of the retry interval, of at most this. */
  private static final long MAX_JITTER_BASE = TimeUnit.MILLISECONDS.toNanos(500);

  private enum State {
    NEW,
    CONTENDING,
    LEADING,
    CLOSED
  }

  private final Lease lease;
  private final LeaderWork work;
  private final Executor workExecutor;
  private final Scheduler scheduler;
  private final Duration stopTimeout;
  private final List<LeadershipListener> listeners;
  private final LeaseBackend observeOn; // null: poll only
  private final RandomGenerator random; // the jitter after a free event; under lock
  private final Object lock = new Object();

  // Guarded by lock.
  private final Backoff backoff;
  private State state = State.NEW;
  private Scheduler.Cancellable cancelRetry = Scheduler.Cancellable.NONE;
  private Subscription lostSubscription;
  private Subscription observation; // while following, where the backend can observe
  private boolean observing; // observation set, or being subscribed
  private boolean observeUnsupported;
  private boolean attempting; // an acquire() is in flight
  private boolean freedDuringAttempt; // the lease was seen free while it was

  /** The holding as last observed (or our own while leading); empty: free or not known. */
  private volatile Optional<LeaseHolding> leader = Optional.empty();

  /** The current term, from the grant until its work has ended; read without the lock. */
  private volatile Term term;

  private LeaderElection(Builder b) {
    this.lease = b.lease;
    this.work = b.work;
    this.scheduler = b.scheduler;
    this.stopTimeout = b.stopTimeout;
    this.listeners = List.copyOf(b.listeners);
    this.observeOn = b.observeOn;
    this.random = b.random;
    this.backoff = new Backoff(b.initialBackoff, b.maxBackoff, b.random);
    this.workExecutor = b.workExecutor != null ? b.workExecutor : threadPerTerm(lease.name());
  }

  /**
   * Starts building an election.
   *
   * @param lease the lease to lead with; the election uses it exclusively from {@link #start()}
   * @param work the leader-only work
   * @return a builder with the defaults described on its setters
   */
  public static Builder builder(Lease lease, LeaderWork work) {
    return new Builder(lease, work);
  }

  /**
   * Starts contending. Returns at once; the work starts on its own thread once the lease is held.
   *
   * @return this election
   * @throws IllegalStateException if already started or closed
   */
  public LeaderElection start() {
    synchronized (lock) {
      if (state != State.NEW) {
        throw new IllegalStateException(
            "the leader election for lease '" + lease.name() + "' was already started"
                + (state == State.CLOSED ? " and is closed" : ""));
      }
      state = State.CONTENDING;
      lostSubscription = lease.onLost(this::onLost);
    }
    log.info("Contending for leadership of lease '{}' as {}", lease.name(), lease.holder());
    scheduler.execute(this::contend);
    return this;
  }

  /**
   * Whether this process leads now: it holds the lease in a term whose work has not been told to
   * stop. Local, no I/O; never {@code true} when {@link Lease#checkAlive()} is {@code false}, so
   * never past the lease's local safe deadline, even when no timer could run. Like {@code
   * checkAlive()} it may be out of date a moment after it answers.
   *
   * @return whether this process leads
   */
  public boolean isLeader() {
    Term t = term;
    return t != null && t.isLeader();
  }

  /**
   * Who leads, as far as this process knows: its own holding while it leads; as a follower, the
   * holding last observed on the backend given to {@link Builder#observing(LeaseBackend)} (e.g.
   * to forward requests to the leader, whose owner name can carry its address). Empty when the
   * lease is free, before the first observation, or where nothing is observed. For routing, never
   * for safety: it may be out of date, and only {@link #isLeader()} is this process's own answer.
   *
   * @return the leader's holding (holder, fencing token, since when where the store records it)
   */
  public Optional<LeaseHolding> currentLeader() {
    return leader;
  }

  /** {@return the lease this election leads with} */
  public Lease lease() {
    return lease;
  }

  // ---------------------------------------------------------------------------------------------

  private void contend() {
    synchronized (lock) {
      if (state != State.CONTENDING || term != null || attempting) {
        return; // an attempt in flight is answered first, and sees a free event it missed
      }
      attempting = true;
      freedDuringAttempt = false;
    }
    CompletableFuture<Boolean> attempt;
    try {
      attempt = lease.acquire();
    } catch (RuntimeException e) {
      attempt = CompletableFuture.failedFuture(e);
    }
    // Off the store's reply thread: starting a term must never delay a renewal.
    attempt.whenComplete((won, error) -> scheduler.execute(() -> acquired(won, error)));
  }

  private void acquired(Boolean won, Throwable error) {
    boolean freedMeanwhile;
    synchronized (lock) {
      attempting = false;
      freedMeanwhile = freedDuringAttempt;
    }
    if (!Boolean.TRUE.equals(won)) {
      if (error != null) {
        log.warn(
            "Could not acquire lease '{}' (outcome unknown: {}); trying again after a backoff",
            lease.name(),
            rootMessage(error));
      } else {
        log.debug(
            "Lease '{}' is held by {}; trying again after a backoff",
            lease.name(),
            lease.lastKnownHolder().orElse("another holder"));
      }
      if (error == null) {
        observe();
      }
      if (freedMeanwhile) {
        contendSoon(); // the holder went while we asked: ask again now, not after the backoff
      } else {
        retryLater();
      }
      return;
    }
    OptionalLong token = lease.fencingToken();
    Term t = null;
    boolean closed;
    synchronized (lock) {
      closed = state == State.CLOSED;
      if (state == State.CONTENDING && term == null && token.isPresent()) {
        t = new Term(token.getAsLong());
        term = t;
        state = State.LEADING;
        backoff.reset();
        leader = Optional.of(new LeaseHolding(lease.holder().toString(), t.token, Optional.empty()));
      }
    }
    if (t != null) {
      stopObserving();
    }
    if (t == null) {
      if (!closed) {
        retryLater(); // lost again before the term could start
      }
      return; // close() releases what the acquire got
    }
    Term started = t;
    if (!started.isLeader()) {
      // A loss whose handler ran before the term was published found no term to stop; the lease
      // already said so (handlers run after checkAlive() turns false), so stop the term here.
      stop(started, Why.LOST, "the lease was lost before the work started");
    } else {
      log.info(
          "Leading with lease '{}' (token {}); starting the work", lease.name(), started.token);
      notifyListeners(l -> l.startedLeading(started.token));
    }
    try {
      workExecutor.execute(started);
    } catch (RejectedExecutionException e) {
      log.error("The work executor of lease '{}' rejected the leader work", lease.name(), e);
      termEnded(started, e);
    }
  }

  /** The lease's onLost handler: interrupts the work at once and waits for nothing. */
  private void onLost(LeaseLost reason) {
    Term t = term;
    if (t != null) {
      stop(t, Why.LOST, reason.toString());
    }
  }

  /** Tells {@code t}'s work to stop, once, whatever asks first. */
  private void stop(Term t, Why why, String detail) {
    if (!t.markStopped(why)) {
      return;
    }
    t.cancel();
    if (why == Why.LOST) {
      log.warn(
          "Lost lease '{}' (token {}): {}; interrupted the leader work", lease.name(), t.token,
          detail);
    }
    notifyListeners(l -> l.stoppedLeading(t.token, why, detail));
  }

  /** Called once per term, after its work has ended (or never started). */
  private void termEnded(Term t, Throwable failure) {
    boolean closed;
    synchronized (lock) {
      if (term == t) {
        term = null;
        leader = Optional.empty(); // until observed again
      }
      closed = state == State.CLOSED;
      if (state == State.LEADING) {
        state = State.CONTENDING;
      }
    }
    Why why = failure != null ? Why.WORK_FAILED : Why.WORK_RETURNED;
    boolean voluntary = t.markStopped(why);
    if (voluntary) {
      if (failure != null) {
        log.error(
            "The leader work of lease '{}' (token {}) failed; releasing the lease",
            lease.name(),
            t.token,
            failure);
      } else {
        log.info("The leader work of lease '{}' (token {}) returned; releasing the lease",
            lease.name(), t.token);
      }
      String detail = failure != null ? "the work threw " + failure : "the work returned";
      notifyListeners(l -> l.stoppedLeading(t.token, why, detail));
    }
    t.ended.complete(null);
    if (closed) {
      return; // close() releases
    }
    if (voluntary) {
      lease.release().whenComplete((ignored, error) -> retryLater());
    } else {
      retryLater();
    }
  }

  /**
   * As a refused follower: observe the lease, once, where the backend can. Subscribes outside the
   * lock (a backend may reach its store first), then keeps the subscription only if it still
   * follows.
   */
  private void observe() {
    synchronized (lock) {
      if (observeOn == null || observeUnsupported || observing
          || state != State.CONTENDING || term != null) {
        return;
      }
      observing = true;
    }
    Subscription s = null;
    try {
      s = observeOn.observe(lease.name(), this::observed);
    } catch (UnsupportedOperationException e) {
      log.debug("Cannot observe lease '{}' ({}); polling with a backoff", lease.name(),
          e.getMessage());
      synchronized (lock) {
        observeUnsupported = true; // keep polling with the backoff
      }
    } catch (RuntimeException e) {
      log.warn("Could not observe lease '{}'; polling with a backoff", lease.name(), e);
    }
    boolean keep;
    synchronized (lock) {
      keep = s != null && observing && state == State.CONTENDING && term == null;
      if (keep) {
        observation = s;
      } else {
        observing = false;
      }
    }
    if (!keep && s != null) {
      s.cancel(); // won, or closed, meanwhile
    }
  }

  private void stopObserving() {
    Subscription s;
    synchronized (lock) {
      s = observation;
      observation = null;
      observing = false;
    }
    if (s != null) {
      s.cancel();
    }
  }

  /** An observed event, on the backend's callback thread: note the leader; contend if free. */
  private void observed(LeaseEvent event) {
    if (term != null) {
      return; // leading: a late event of the cancelled observation says nothing new
    }
    boolean free = event.leavesLeaseFree();
    // An ended tenure's holding is the one that ended; every other event's is the holding now.
    leader = free ? Optional.empty() : event.holding();
    if (free) {
      synchronized (lock) {
        if (attempting) {
          freedDuringAttempt = true; // answered first; then asks again at once
        } else {
          contendSoon();
        }
      }
    }
  }

  /**
   * Contends after a jitter of up to a quarter of the retry interval (at most 125 ms) instead of
   * the backoff, so that followers told of the same free lease do not all ask at once.
   */
  private void contendSoon() {
    synchronized (lock) {
      if (state != State.CONTENDING || term != null) {
        return;
      }
      cancelRetry.cancel();
      long quarter = Math.min(lease.settings().retryInterval().toNanos(), MAX_JITTER_BASE) / 4;
      cancelRetry = scheduler.schedule(this::contend, random.nextLong(quarter + 1));
    }
  }

  private void retryLater() {
    synchronized (lock) {
      if (state != State.CONTENDING || term != null) {
        return;
      }
      cancelRetry = scheduler.schedule(this::contend, backoff.nextDelayNanos());
    }
  }

  private void notifyListeners(Consumer<LeadershipListener> call) {
    if (listeners.isEmpty()) {
      return;
    }
    scheduler.execute(
        () -> {
          for (LeadershipListener l : listeners) {
            try {
              call.accept(l);
            } catch (RuntimeException | Error e) {
              log.error("A leadership listener of lease '{}' threw", lease.name(), e);
            }
          }
        });
  }

  /**
   * Stops contending; interrupts the work if it runs and waits for it to end, at most the {@link
   * Builder#stopTimeout(Duration) stop timeout}; then releases the lease and waits for the store's
   * confirmation (at most the lease's TTL). Releasing while the work still ran would let another
   * leader start beside it, so a work that ignores interruption delays the release until the
   * timeout, after which the lease is released anyway and an error is logged. Idempotent; the lease
   * itself stays open.
   */
  @Override
  public void close() {
    Term t;
    Subscription subscription;
    synchronized (lock) {
      if (state == State.CLOSED) {
        return;
      }
      state = State.CLOSED;
      cancelRetry.cancel();
      t = term;
      subscription = lostSubscription;
    }
    if (t != null) {
      stop(t, Why.CLOSED, "the election was closed");
      if (!t.runsOnCurrentThread()) {
        await(t.ended, stopTimeout, "the leader work to stop");
      }
    }
    if (subscription != null) {
      subscription.cancel();
    }
    stopObserving();
    await(lease.release(), lease.settings().ttl(), "the store to confirm the release");
    log.info("Closed the leader election of lease '{}'", lease.name());
  }

  private void await(CompletableFuture<?> future, Duration limit, String what) {
    try {
      future.get(limit.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      log.error(
          "Closing the leader election of lease '{}': waited {} for {} in vain; going on",
          lease.name(),
          limit,
          what);
    } catch (ExecutionException e) {
      log.warn(
          "Closing the leader election of lease '{}': {} failed: {}",
          lease.name(),
          what,
          rootMessage(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String rootMessage(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return String.valueOf(e.getMessage());
  }

  private static Executor threadPerTerm(String leaseName) {
    return task -> {
      Thread t = new Thread(task, "leasehold-leader-" + leaseName);
      t.setDaemon(true);
      t.start();
    };
  }

  @Override
  public String toString() {
    Term t = term;
    return "LeaderElection{lease='" + lease.name() + "', "
        + (t != null && t.isLeader() ? "leading with token " + t.token : "not leading") + '}';
  }

  // ---------------------------------------------------------------------------------------------

  /** One term of leadership: its work, the thread running it, and how it was stopped. */
  private final class Term implements Runnable, LeaderContext {
    final long token;
    final CompletableFuture<Void> ended = new CompletableFuture<>();
    private volatile Why stoppedBy;

    // Guarded by this.
    private Thread runner;
    private boolean cancelled;

    Term(long token) {
      this.token = token;
    }

    @Override
    public long fencingToken() {
      return token;
    }

    @Override
    public boolean isLeader() {
      if (stoppedBy != null) {
        return false;
      }
      OptionalLong now = lease.fencingToken(); // empty exactly when checkAlive() is false
      return now.isPresent() && now.getAsLong() == token;
    }

    @Override
    public Lease lease() {
      return lease;
    }

    /** {@return whether this call set the cause: the first stop wins} */
    synchronized boolean markStopped(Why why) {
      if (stoppedBy != null) {
        return false;
      }
      stoppedBy = why;
      return true;
    }

    synchronized void cancel() {
      cancelled = true;
      if (runner != null) {
        runner.interrupt();
      }
    }

    synchronized boolean runsOnCurrentThread() {
      return runner == Thread.currentThread();
    }

    @Override
    public void run() {
      synchronized (this) {
        if (!cancelled) {
          runner = Thread.currentThread();
        }
      }
      Throwable failure = null;
      if (runner != null) {
        try {
          work.lead(this);
        } catch (InterruptedException e) {
          if (stoppedBy == null) {
            failure = e; // interrupted by someone else: the work failed
          }
        } catch (Exception | Error e) {
          failure = e;
        } finally {
          synchronized (this) {
            runner = null;
          }
          // An interrupt sent as the work was ending must not hit the executor's next task.
          Thread.interrupted();
        }
      }
      termEnded(this, failure);
      if (failure instanceof VirtualMachineError fatal) {
        throw fatal;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------

  /** Settings of a {@link LeaderElection}; every setter checks its value at once. */
  public static final class Builder {
    private final Lease lease;
    private final LeaderWork work;
    private final List<LeadershipListener> listeners = new ArrayList<>();
    private Executor workExecutor;
    private LeaseBackend observeOn;
    private Scheduler scheduler = SharedScheduler.INSTANCE;
    private RandomGenerator random = RandomGenerator.getDefault();
    private Duration initialBackoff;
    private Duration maxBackoff;
    private Duration stopTimeout;

    private Builder(Lease lease, LeaderWork work) {
      this.lease = Objects.requireNonNull(lease, "lease");
      this.work = Objects.requireNonNull(work, "work");
      this.initialBackoff = lease.settings().retryInterval();
      this.maxBackoff = lease.settings().heartbeatInterval();
      if (maxBackoff.compareTo(initialBackoff) < 0) {
        maxBackoff = initialBackoff;
      }
      this.stopTimeout = lease.settings().ttl();
    }

    /**
     * Where each term's work runs. Default: a new daemon thread per term, named {@code
     * leasehold-leader-<lease>}. The work is interrupted through the thread that runs it.
     *
     * @param executor runs one task per term
     * @return this builder
     */
    public Builder workExecutor(Executor executor) {
      this.workExecutor = Objects.requireNonNull(executor, "workExecutor");
      return this;
    }

    /**
     * The backend the lease was made by: a follower observes the lease on it, contends again as
     * soon as it frees (instead of only after its backoff) and tells {@link
     * LeaderElection#currentLeader()} who leads. A backend that cannot observe throws {@link
     * UnsupportedOperationException}; the election then polls with its backoff. Default: none,
     * poll only.
     *
     * @param backend the backend that made the lease
     * @return this builder
     */
    public Builder observing(LeaseBackend backend) {
      this.observeOn = Objects.requireNonNull(backend, "backend");
      return this;
    }

    /**
     * Where retries and listener calls run. Default: the shared recipe thread ({@code SharedScheduler}).
     *
     * @param scheduler the scheduler; a virtual one in tests
     * @return this builder
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * The source of the backoff's jitter. Default: {@link RandomGenerator#getDefault()}; a seeded
     * one makes a test repeatable. Used under the election's lock.
     *
     * @param random the random generator
     * @return this builder
     */
    public Builder random(RandomGenerator random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /**
     * The backoff between acquire attempts: after {@code n} refusals or failures in a row, a delay
     * drawn from {@code [d/2, d]}, {@code d = min(max, initial × 2^n)}. Defaults: the lease's
     * {@linkplain io.leasehold.LeaseSettings#retryInterval() retry interval} and {@linkplain
     * io.leasehold.LeaseSettings#heartbeatInterval() heartbeat interval}, so a freed lease is
     * taken within about one heartbeat.
     *
     * @param initial the first delay; above zero
     * @param max the largest delay; at least {@code initial}
     * @return this builder
     * @throws IllegalArgumentException if a value is out of range
     */
    public Builder backoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
      if (initial.isNegative() || initial.isZero()) {
        throw new IllegalArgumentException("backoff initial must be above zero; was " + initial);
      }
      if (max.compareTo(initial) < 0) {
        throw new IllegalArgumentException(
            "backoff max must be at least the initial delay " + initial + "; was " + max);
      }
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /**
     * How long {@link LeaderElection#close()} waits for interrupted work to end before it
     * releases the lease anyway. Default: the lease's TTL.
     *
     * @param timeout above zero
     * @return this builder
     * @throws IllegalArgumentException if not above zero
     */
    public Builder stopTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "stopTimeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("stopTimeout must be above zero; was " + timeout);
      }
      this.stopTimeout = timeout;
      return this;
    }

    /**
     * Adds a listener for started and stopped leading.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(LeadershipListener listener) {
      listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /** {@return the election, not started yet} */
    public LeaderElection build() {
      return new LeaderElection(this);
    }

    /** {@return the election, started} */
    public LeaderElection start() {
      return build().start();
    }
  }
}
