package io.leasehold.cli;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.recipes.election.LeaderContext;
import io.leasehold.recipes.election.LeaderElection;
import io.leasehold.recipes.election.LeaderWork;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * One contender of the demo: a simulated process with its own connection to the store, running
 * the singleton recipe a user would ({@link LeaderElection}, docs/recipes.md). The election
 * contends with backoff and jitter and, observing the lease, at once when it frees; while this
 * process leads, its {@link LeaderWork} writes to the {@link FencedRegister} every {@code
 * workInterval}, each write guarded by {@link LeaderContext#isLeader()} and carrying the term's
 * fencing token; when the lease is lost the election interrupts the work; on shutdown closing the
 * election releases the lease.
 *
 * <p>The fault script can pause, cut off and crash the process. A pause freezes all of it, the
 * work included, as a stop-the-world garbage collection would.
 */
final class DemoContender {

  /** A freeze of the whole process that the fault script asked for. */
  private static final class Stall {
    final CountDownLatch frozen = new CountDownLatch(1);
    volatile boolean thawed;
  }

  private final String name;
  private final MemoryBackend process;
  private final Lease lease;
  private final LeaderElection election;
  private final FencedRegister register;
  private final Timeline timeline;
  private final DemoHistory history;
  private final long workNanos;
  /** Makes a crash and a write mutually exclusive: a crashed process writes nothing more. */
  private final Object writeLock = new Object();
  private final AtomicReference<Stall> requestedStall = new AtomicReference<>();
  private final AtomicReference<Stall> activeStall = new AtomicReference<>();
  private volatile TenureRecord current;
  /** The thread running the current term's work, so that a thaw can wake it. */
  private volatile Thread worker;
  private volatile boolean stopping;
  private volatile boolean crashed;

  /**
   * @param name the owner name, such as {@code node-1}
   * @param process this contender's own connection to the shared store
   * @param settings the lease's settings; the name is the one all contenders share
   * @param workInterval how often the leader writes
   * @param seed seeds this contender's backoff jitter
   */
  DemoContender(
      String name,
      MemoryBackend process,
      LeaseSettings settings,
      Duration workInterval,
      FencedRegister register,
      Timeline timeline,
      DemoHistory history,
      long seed) {
    this.name = name;
    this.process = process;
    this.register = register;
    this.timeline = timeline;
    this.history = history;
    this.workNanos = workInterval.toNanos();
    this.lease = process.newLease(settings);
    this.lease.onLost(this::lost);
    Duration ttl = settings.ttl();
    this.election =
        LeaderElection.builder(lease, this::lead)
            .observing(process)
            .backoff(ttl.dividedBy(16), ttl.dividedBy(4))
            .random(new Random(seed))
            .stopTimeout(ttl)
            .build();
  }

  String name() {
    return name;
  }

  void start() {
    timeline.event(name, "contending", "for '" + lease.name() + "'");
    election.start();
  }

  /** {@return whether this contender holds the lease, as far as it knows} */
  boolean isLeading() {
    TenureRecord t = current;
    return t != null && !t.ended() && !crashed && !stopping;
  }

  // ---------------------------------------------------------------------------------------------
  // The leader's work: one term.

  private void lead(LeaderContext term) {
    if (stopping || crashed) {
      return; // time is up: a term won while the elections close is no tenure of the demo
    }
    worker = Thread.currentThread();
    long start = System.nanoTime();
    TenureRecord tenure = history.begin(name, term.fencingToken(), start);
    tenure.safeUntil(start + lease.remaining().toNanos());
    current = tenure;
    timeline.event(name, "acquired", "'" + lease.name() + "'  token " + tenure.token());
    while (!crashed) {
      long now = System.nanoTime();
      if (stopping) {
        tenure.end(now, "released"); // closing the election releases, once this returns
        return;
      }
      if (!term.isLeader()) {
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
      Waiting.until(
          System.nanoTime() + workNanos,
          () -> stopping || crashed || tenure.ended() || Thread.currentThread().isInterrupted());
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

  /** An onLost handler beside the election's: it tells the timeline. */
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
    unparkWorker();
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
      unparkWorker();
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
      Thread.interrupted(); // frozen means frozen; after the thaw, isLeader() tells what changed
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
    unparkWorker();
  }

  private void unparkWorker() {
    Thread w = worker;
    if (w != null) {
      LockSupport.unpark(w);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Shutdown.

  /** Asks the work to stop: a leader ends its tenure; {@link #close} then releases the lease. */
  void stop() {
    stopping = true;
    thaw();
    unparkWorker();
  }

  /**
   * Closes the election (it interrupts the work, waits for it, then releases the lease), then the
   * process's connection and threads. A crashed process releases nothing: its lease objects are
   * dead, and the store's TTL cleans up.
   */
  void close(Duration maxWait) {
    TenureRecord t = current;
    if (!crashed) {
      election.close();
      if (t != null && "released".equals(t.endedBy())) {
        timeline.event(name, "released", "'" + lease.name() + "'  token " + t.token());
      }
    }
    process.close();
  }
}
