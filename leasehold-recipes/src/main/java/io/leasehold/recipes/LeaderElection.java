package io.leasehold.recipes;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Subscription;
import io.leasehold.recipes.LeadershipListener.Why;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
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
 * <p>The election neither opens nor closes the lease; it registers one {@code onLost} handler and
 * removes it on close. Use one lease object per election.
 */
public final class LeaderElection implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LeaderElection.class);

  private enum State {
    NEW,
    CONTENDING,
    LEADING,
    CLOSED
  }

  private final Lease lease;
  private final LeaderWork work;
  private final Executor workExecutor;
  private final RecipeScheduler scheduler;
  private final Duration stopTimeout;
  private final List<LeadershipListener> listeners;
  private final Object lock = new Object();

  // Guarded by lock.
  private final Backoff backoff;
  private State state = State.NEW;
  private Runnable cancelRetry = () -> {};
  private Subscription lostSubscription;

  /** The current term, from the grant until its work has ended; read without the lock. */
  private volatile Term term;

  private LeaderElection(Builder b) {
    this.lease = b.lease;
    this.work = b.work;
    this.scheduler = b.scheduler;
    this.stopTimeout = b.stopTimeout;
    this.listeners = List.copyOf(b.listeners);
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

  /** {@return the lease this election leads with} */
  public Lease lease() {
    return lease;
  }

  // ---------------------------------------------------------------------------------------------

  private void contend() {
    synchronized (lock) {
      if (state != State.CONTENDING || term != null) {
        return;
      }
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
      retryLater();
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
      }
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
      cancelRetry.run();
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
    private RecipeScheduler scheduler = RecipeScheduler.system();
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
     * Where retries and listener calls run. Default: {@link RecipeScheduler#system()}.
     *
     * @param scheduler the scheduler; a virtual one in tests
     * @return this builder
     */
    public Builder scheduler(RecipeScheduler scheduler) {
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
