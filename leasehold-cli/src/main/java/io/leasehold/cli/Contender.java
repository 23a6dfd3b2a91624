package io.leasehold.cli;

import io.leasehold.Lease;
import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * One contender of the demo: a simulated process with its own connection to the store, running
 * the singleton pattern of docs/recipes.md (LeaderElection) on its worker thread. It loops on {@code acquire()} with
 * backoff and jitter; while it holds the lease it does the leader-only work, a write to the
 * {@link FencedRegister} every {@code ttl / 8}, each guarded by {@code checkAlive()} and carrying
 * the tenure's fencing token; its {@code onLost} handler stops that work at once; on shutdown it
 * releases.
 *
 * <p>The fault script can pause, cut off and crash the process. A pause freezes all of it, the
 * worker included, as a stop-the-world garbage collection would.
 */
final class Contender {

  private enum Mode {
    STARTING,
    STANDBY,
    UNSURE,
    LEADING
  }

  /** A freeze of the whole process that the fault script asked for. */
  private static final class Stall {
    final CountDownLatch frozen = new CountDownLatch(1);
    volatile boolean thawed;
  }

  private final String name;
  private final MemoryBackend process;
  private final Lease lease;
  private final FencedRegister register;
  private final Timeline timeline;
  private final History history;
  private final Random random;
  private final long workNanos;
  private final long minBackoffNanos;
  private final long maxBackoffNanos;
  private final long waitNanos;
  private final Thread worker;
  /** Makes a crash and a write mutually exclusive: a crashed process writes nothing more. */
  private final Object writeLock = new Object();
  private final AtomicReference<Stall> requestedStall = new AtomicReference<>();
  private final AtomicReference<Stall> activeStall = new AtomicReference<>();
  private volatile TenureRecord current;
  private volatile boolean stopping;
  private volatile boolean crashed;

  /**
   * @param name the owner name, such as {@code node-1}
   * @param process this contender's own connection to the shared store
   * @param settings the lease's settings; the name is the one all contenders share
   * @param workInterval how often the leader writes
   * @param seed seeds this contender's backoff jitter
   */
  Contender(
      String name,
      MemoryBackend process,
      LeaseSettings settings,
      Duration workInterval,
      FencedRegister register,
      Timeline timeline,
      History history,
      long seed) {
    this.name = name;
    this.process = process;
    this.register = register;
    this.timeline = timeline;
    this.history = history;
    this.random = new Random(seed);
    this.workNanos = workInterval.toNanos();
    this.minBackoffNanos = settings.ttl().toNanos() / 16;
    this.maxBackoffNanos = settings.ttl().toNanos() / 4;
    this.waitNanos = settings.ttl().toNanos() * 2;
    this.worker = new Thread(this::run, "demo-" + name);
    this.worker.setDaemon(true);
    this.lease = process.newLease(settings);
    this.lease.onLost(this::lost);
  }

  String name() {
    return name;
  }

  void start() {
    worker.start();
  }

  /** {@return whether this contender holds the lease, as far as it knows} */
  boolean isLeading() {
    TenureRecord t = current;
    return t != null && !t.ended() && !crashed && !stopping;
  }

  // ---------------------------------------------------------------------------------------------
  // The singleton loop.

  private void run() {
    Mode mode = Mode.STARTING;
    int attempt = 0;
    while (!stopping && !crashed) {
      try {
        if (lease.acquire().get(waitNanos, TimeUnit.NANOSECONDS)) {
          lead();
          mode = Mode.LEADING;
          attempt = 0;
          continue;
        }
        if (mode != Mode.STANDBY) {
          timeline.event(
              name, "standby", "'" + lease.name() + "' is held elsewhere; retrying with backoff");
        }
        mode = Mode.STANDBY;
      } catch (ExecutionException | TimeoutException e) {
        if (mode != Mode.UNSURE && !crashed) {
          timeline.event(name, "unsure", "acquire outcome unknown (" + why(e) + "); retrying");
        }
        mode = Mode.UNSURE;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      Waiting.until(System.nanoTime() + backoffNanos(attempt++), () -> stopping || crashed);
    }
  }

  /** Does the leader-only work for as long as the tenure just acquired lasts. */
  private void lead() {
    long start = System.nanoTime();
    OptionalLong fencing = lease.fencingToken();
    if (fencing.isEmpty()) {
      return; // lost in the instant after acquiring; the loss handler says so
    }
    TenureRecord tenure = history.begin(name, fencing.getAsLong(), start);
    tenure.safeUntil(start + lease.remaining().toNanos());
    current = tenure;
    timeline.event(name, "acquired", "'" + lease.name() + "'  token " + tenure.token());
    while (!stopping && !crashed) {
      long now = System.nanoTime();
      if (!lease.checkAlive()) {
        tenure.end(now, "expired");
        timeline.event(
            name, "stopped", "leader work: checkAlive() is false for token " + tenure.token());
        return;
      }
      tenure.safeUntil(now + lease.remaining().toNanos());
      stallIfAsked(); // a pause strikes here, the worst moment: after the check, before the write
      if (!write(tenure)) {
        return;
      }
      Waiting.until(System.nanoTime() + workNanos, () -> stopping || crashed || tenure.ended());
    }
    if (!crashed) {
      release(tenure);
    }
  }

  /** One unit of leader work; {@code false} if the process has crashed. */
  private boolean write(TenureRecord tenure) {
    synchronized (writeLock) {
      if (crashed) {
        return false;
      }
      FencedRegister.Outcome outcome = register.write(tenure.token(), name);
      if (outcome.accepted()) {
        tenure.wrote();
      } else {
        timeline.event(
            name,
            "REJECTED",
            "stale write with token " + tenure.token() + ": the register has seen token "
                + outcome.highestToken());
      }
      return true;
    }
  }

  /** The onLost handler: runs on the backend's callback thread and stops the work at once. */
  private void lost(LeaseLost reason) {
    long now = System.nanoTime();
    TenureRecord t = current;
    if (t != null) {
      t.end(now, "lost: " + reason.kind());
    }
    timeline.event(
        name,
        "lost",
        "'" + lease.name() + "'  token " + (t != null ? t.token() : "?") + "  " + reason.kind()
            + ": " + reason.detail());
    LockSupport.unpark(worker);
  }

  private void release(TenureRecord tenure) {
    if (!tenure.end(System.nanoTime(), "released")) {
      return;
    }
    try {
      lease.release().get(waitNanos, TimeUnit.NANOSECONDS);
      timeline.event(name, "released", "'" + lease.name() + "'  token " + tenure.token());
    } catch (ExecutionException | TimeoutException e) {
      timeline.event(
          name,
          "released",
          "'" + lease.name() + "'  token " + tenure.token() + " without the store's confirmation ("
              + why(e) + "); the store lets it expire");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private long backoffNanos(int attempt) {
    long base = Math.min(maxBackoffNanos, minBackoffNanos << Math.min(attempt, 8));
    return (long) (base * (0.5 + random.nextDouble()));
  }

  /** A short reason for the timeline; the engine's log has the full story. */
  private static String why(Exception e) {
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    if (cause instanceof TimeoutException
        || (cause instanceof LeaseException le && le.code() == LeaseException.Code.TIMEOUT)) {
      return "the store did not answer in time";
    }
    if (cause instanceof LeaseException le && le.code() == LeaseException.Code.UNAVAILABLE) {
      return "the store is unreachable";
    }
    return String.valueOf(cause);
  }

  // ---------------------------------------------------------------------------------------------
  // Faults, called by the fault script.

  /**
   * Freezes the whole process, as a long stop-the-world garbage collection would, at the worst
   * moment: right after the worker's next {@code checkAlive()} said {@code true} and before the
   * write it guards. Its timers and loss handlers stop too.
   *
   * @param maxWait how long to wait for the worker to get there
   * @return whether the process froze; {@code false} if it stopped leading first
   */
  boolean freezeAfterNextCheck(Duration maxWait) throws InterruptedException {
    Stall stall = new Stall();
    requestedStall.set(stall);
    if (!stall.frozen.await(maxWait.toNanos(), TimeUnit.NANOSECONDS)
        && requestedStall.compareAndSet(stall, null)) {
      return false;
    }
    stall.frozen.await(); // at once: the worker took the request
    return true;
  }

  /** Lets a frozen process run again: timers, loss handlers and the worker, all at once. */
  void thaw() {
    Stall stall = activeStall.getAndSet(null);
    if (stall != null) {
      process.resume();
      stall.thawed = true;
      LockSupport.unpark(worker);
    }
  }

  private void stallIfAsked() {
    Stall stall = requestedStall.getAndSet(null);
    if (stall == null) {
      return;
    }
    process.pause();
    activeStall.set(stall);
    stall.frozen.countDown();
    while (!stall.thawed && !stopping) {
      LockSupport.park(this);
    }
    thaw(); // only if the run ended during the stall: the process must run to stop
  }

  /** Partitions the process from the store until {@link #heal()}. */
  void cutOff() {
    process.cutOff();
  }

  void heal() {
    process.heal();
  }

  /** Kills the process: no release, no further work or renewal; the store's TTL cleans up. */
  void crash() {
    synchronized (writeLock) {
      crashed = true;
    }
    process.crash();
    TenureRecord t = current;
    if (t != null) {
      t.end(System.nanoTime(), "crashed");
    }
    LockSupport.unpark(worker);
  }

  // ---------------------------------------------------------------------------------------------
  // Shutdown.

  /** Asks the worker to stop; the leader releases the lease on its way out. */
  void stop() {
    stopping = true;
    thaw();
    LockSupport.unpark(worker);
  }

  /** Waits for the worker to finish, then closes the process's connection and threads. */
  void close(Duration maxWait) throws InterruptedException {
    worker.join(Math.max(1, maxWait.toMillis()));
    process.close();
  }
}
