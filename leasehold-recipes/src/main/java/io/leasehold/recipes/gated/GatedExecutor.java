package io.leasehold.recipes.gated;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.Subscription;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs irreversible steps only while a lease is held: the shard-coordinator pattern as a
 * reusable guard.
 *
 * <ol>
 *   <li>{@link #start()} acquires the lease; until it succeeds every step is refused.</li>
 *   <li>Each step is checked with {@link Lease#checkAlive()} right before it runs, on the thread
 *       that runs it, and runs with the fencing token of the tenure that admitted it.</li>
 *   <li>When the lease is lost, every step not yet started is rejected with a {@link
 *       LeaseNotHeldException} naming the loss, and the executor stops for good: later steps are
 *       refused. Make a new executor (with a new acquire) to serve again.</li>
 * </ol>
 *
 * <pre>{@code
 * GatedExecutor coordinator = new GatedExecutor(lease, Executors.newSingleThreadExecutor());
 * if (coordinator.start().join()) {
 *   coordinator.submit(token -> shards.allocate(shard, node, token))
 *       .exceptionally(e -> { reply.notCoordinator(e); return null; });
 * }
 * }</pre>
 *
 * <p>A step already running when the lease is lost is not interrupted: it was admitted while the
 * lease was held, and its fencing token lets the resource reject it if it comes too late. Steps
 * that run long should check {@link #isServing()} between their own parts.
 */
public final class GatedExecutor implements Executor, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(GatedExecutor.class);

  /**
   * The executor's life: {@code NEW} → {@code STARTING} (start() acquires the lease) → {@code
   * SERVING} (held: steps run) → {@code STOPPED} (the lease was lost, or close()). A failed start
   * goes back to {@code NEW}; {@code STOPPED} is final.
   */
  private enum State {
    NEW,
    STARTING,
    SERVING,
    STOPPED
  }

  private final Lease lease;
  private final Executor executor;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final Set<Step<?>> pending = ConcurrentHashMap.newKeySet();
  private final Set<Step<?>> running = ConcurrentHashMap.newKeySet();
  private final Subscription subscription;
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile LeaseNotHeldException stopReason;

  /**
   * Makes a gate that runs steps on {@code executor} while {@code lease} is held. It serves
   * nothing until {@link #start()}.
   *
   * @param lease the lease; used by this gate only
   * @param executor runs the steps; a single thread keeps them in order
   */
  public GatedExecutor(Lease lease, Executor executor) {
    this.lease = Objects.requireNonNull(lease, "lease");
    this.executor = Objects.requireNonNull(executor, "executor");
    this.subscription = lease.onLost(this::onLost);
  }

  /**
   * Acquires the lease; from a {@code true} answer on, steps are served.
   *
   * @return {@code true} if serving; {@code false} if another holder has the lease (the gate
   *     stays unstarted and {@code start()} may be called again); exceptionally with a {@link
   *     io.leasehold.LeaseException} if the outcome is unknown
   * @throws IllegalStateException if already started or stopped
   */
  public CompletableFuture<Boolean> start() {
    if (!state.compareAndSet(State.NEW, State.STARTING)) {
      throw new IllegalStateException(
          "the gated executor of lease '" + lease.name() + "' was already "
              + (state.get() == State.STOPPED ? "stopped" : "started"));
    }
    return lease
        .acquire()
        .thenApply(
            won -> {
              if (won && lease.checkAlive() && state.compareAndSet(State.STARTING, State.SERVING)) {
                log.info(
                    "Serving under lease '{}' (token {})",
                    lease.name(),
                    lease.fencingToken().orElse(-1));
                return true;
              }
              state.compareAndSet(State.STARTING, State.NEW);
              return false;
            })
        .whenComplete(
            (won, error) -> {
              if (error != null) {
                state.compareAndSet(State.STARTING, State.NEW);
              }
            });
  }

  /** {@return whether steps are served: started, and the lease is held (by local knowledge)} */
  public boolean isServing() {
    return state.get() == State.SERVING && lease.checkAlive();
  }

  /**
   * Queues a step. It runs on the executor if the lease is still held when its turn comes.
   *
   * @param step the step
   * @param <T> its result type
   * @return the step's result; fails with {@link LeaseNotHeldException} if the step was refused
   *     or rejected without running, or with what the step threw
   */
  public <T> CompletableFuture<T> submit(GatedStep<T> step) {
    Objects.requireNonNull(step, "step");
    Step<T> s = new Step<>(step);
    if (state.get() != State.SERVING) {
      s.reject(refusal());
      return s.result;
    }
    pending.add(s);
    if (state.get() != State.SERVING) {
      // Stopped between the check and the add; the stop may not have seen this step.
      s.reject(refusal());
    } else {
      try {
        executor.execute(s);
      } catch (RejectedExecutionException e) {
        s.reject(e);
      }
    }
    return s.result;
  }

  /**
   * Runs {@code command} as a gated step; a refusal is only visible in the log. Prefer {@link
   * #submit(GatedStep)}, whose future says what happened.
   *
   * @param command the step
   * @throws LeaseNotHeldException if the gate is not serving when called
   */
  @Override
  public void execute(Runnable command) {
    Objects.requireNonNull(command, "command");
    if (state.get() != State.SERVING) {
      throw refusal();
    }
    submit(token -> {
          command.run();
          return null;
        })
        .whenComplete(
            (ignored, error) -> {
              if (error != null) {
                log.warn("A gated step of lease '{}' did not complete: {}", lease.name(), error.toString());
              }
            });
  }

  private void onLost(LeaseLost loss) {
    stop(
        new LeaseNotHeldException(
            "lease '" + lease.name() + "' was lost (" + loss + "); the step was rejected and did"
                + " not run",
            loss));
    log.warn(
        "Lease '{}' lost: {}; rejected every pending step and stopped serving", lease.name(), loss);
  }

  private void stop(LeaseNotHeldException reason) {
    synchronized (state) {
      if (stopReason == null) {
        stopReason = reason;
      }
      state.set(State.STOPPED);
    }
    for (Step<?> s : pending) {
      s.reject(stopReason);
    }
  }

  private LeaseNotHeldException refusal() {
    LeaseNotHeldException reason = stopReason;
    if (reason != null) {
      return reason;
    }
    return new LeaseNotHeldException(
        "the gated executor of lease '" + lease.name() + "' is not serving: the lease has not"
            + " been acquired through start()", null);
  }

  /**
   * Stops serving, rejects every step not yet started, waits for the running steps (at most
   * until the lease's local safe deadline, beyond which they could not count on it), then
   * releases the lease. Idempotent; the lease itself stays open.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    stop(
        new LeaseNotHeldException(
            "the gated executor of lease '" + lease.name() + "' was closed; the step did not run",
            null));
    subscription.cancel();
    CompletableFuture<?>[] inFlight =
        running.stream().map(s -> s.result).toArray(CompletableFuture<?>[]::new);
    Duration left = lease.remaining();
    try {
      if (inFlight.length > 0 && !left.isZero()) {
        CompletableFuture.allOf(inFlight)
            .handle((ignored, error) -> null)
            .get(left.toNanos(), TimeUnit.NANOSECONDS);
      }
      lease.release().get(lease.settings().ttl().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException | ExecutionException e) {
      log.warn(
          "Closing the gated executor of lease '{}': {}; the store lets the lease expire",
          lease.name(),
          e instanceof TimeoutException ? "no answer in time" : e.getCause().toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "GatedExecutor{lease='" + lease.name() + "', "
        + (isServing() ? "serving" : "not serving") + ", pending=" + pending.size() + '}';
  }

  /** A submitted step: pending until it runs or is rejected, whichever claims it first. */
  private final class Step<T> implements Runnable {
    private final GatedStep<T> step;
    final CompletableFuture<T> result = new CompletableFuture<>();
    /** Set once, by whichever comes first: running the step or rejecting it. */
    private final AtomicBoolean claimed = new AtomicBoolean();

    Step(GatedStep<T> step) {
      this.step = step;
    }

    void reject(RejectedExecutionException reason) {
      if (claimed.compareAndSet(false, true)) {
        pending.remove(this);
        result.completeExceptionally(reason);
      }
    }

    @Override
    public void run() {
      if (!claimed.compareAndSet(false, true)) {
        return; // rejected before its turn
      }
      pending.remove(this);
      // The gate: checked on the thread that runs the step, right before it runs.
      OptionalLong token = lease.fencingToken();
      if (state.get() != State.SERVING || token.isEmpty()) {
        result.completeExceptionally(
            stopReason != null
                ? stopReason
                : new LeaseNotHeldException(
                    "lease '" + lease.name() + "' is no longer held (its local safe deadline"
                        + " passed); the step was rejected and did not run", null));
        return;
      }
      running.add(this);
      try {
        result.complete(step.run(token.getAsLong()));
      } catch (Exception | Error e) {
        result.completeExceptionally(e);
      } finally {
        running.remove(this);
      }
    }
  }
}
