package io.leasehold.cli;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.Subscription;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletionException;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The logic of {@code leasehold run}, apart from option parsing so that tests can give it any
 * lease: acquire (or wait for) the lease, run the command in its own process group while it is
 * held, stop the group when the lease is lost, release when the command exits.
 */
final class LeaseRunner {

  /** The lease is held elsewhere (no {@code --wait}), or {@code --timeout} passed (EX_TEMPFAIL). */
  static final int HELD_ELSEWHERE = ExitStatus.TEMPORARY;

  /** The lease was lost while the command ran; the command was stopped (EX_SOFTWARE). */
  static final int LOST = ExitStatus.LOST;

  /** Whether the lease is free could not be found out: store unreachable (EX_UNAVAILABLE). */
  static final int UNAVAILABLE = ExitStatus.UNAVAILABLE;

  /** The store refused the lease for want of a right (EX_NOPERM): definite, not retried. */
  static final int DENIED = ExitStatus.DENIED;

  /** The command could not be started, as a shell reports a command it cannot run. */
  static final int CANNOT_START = ExitStatus.CANNOT_RUN;

  /** This process was told to stop (SIGINT, SIGTERM) while waiting for the lease. */
  static final int INTERRUPTED = ExitStatus.INTERRUPTED;

  private final Lease lease;
  private final List<String> command;
  private final boolean wait;
  private final Duration timeout;
  private final Duration grace;
  private final PrintWriter err;
  private final LeaseBackend observeOn; // null: poll only

  /**
   * What ends a wait between attempts early: {@link #STOP} (shutdown) or {@link #FREED} (the
   * observed lease was released, expired or revoked).
   */
  private final BlockingQueue<Object> nudges = new LinkedBlockingQueue<>();
  private static final Object STOP = "stop";
  private static final Object FREED = "freed";
  /** The jitter after a free event: up to a quarter of the retry interval, of at most this. */
  private static final long MAX_JITTER_BASE = TimeUnit.MILLISECONDS.toNanos(500);

  private final CountDownLatch stopped = new CountDownLatch(1);
  private final CountDownLatch done = new CountDownLatch(1);
  private volatile boolean stopRequested;

  // Guarded by this.
  private ProcessGroup group;
  private boolean finished;
  private LeaseLost loss;
  private long lostToken;

  /**
   * @param timeout how long {@code --wait} waits; {@code null} for ever
   * @param grace how long the command has between SIGTERM and SIGKILL after a loss
   */
  LeaseRunner(
      Lease lease,
      List<String> command,
      boolean wait,
      Duration timeout,
      Duration grace,
      PrintWriter err) {
    this(lease, command, wait, timeout, grace, err, null);
  }

  /**
   * @param observeOn the backend that made the lease: while waiting, the lease is observed on it
   *     and asked for again as soon as it frees; {@code null}, or a backend that cannot observe:
   *     poll with the backoff only
   */
  LeaseRunner(
      Lease lease,
      List<String> command,
      boolean wait,
      Duration timeout,
      Duration grace,
      PrintWriter err,
      LeaseBackend observeOn) {
    this.observeOn = observeOn;
    this.lease = Objects.requireNonNull(lease, "lease");
    this.command = List.copyOf(command);
    this.wait = wait;
    this.timeout = timeout;
    this.grace = Objects.requireNonNull(grace, "grace");
    this.err = Objects.requireNonNull(err, "err");
  }

  /** Acquires, runs the command, releases; returns the exit status for {@code leasehold run}. */
  int run() throws InterruptedException {
    Subscription subscription = lease.onLost(this::onLost);
    try {
      int refused = acquire();
      if (refused >= 0) {
        return refused;
      }
      return runHeld();
    } finally {
      subscription.cancel();
      done.countDown();
    }
  }

  /** @return -1 once held, else the exit status to end with */
  private int acquire() throws InterruptedException {
    Subscription[] observation = {null};
    try {
      return acquire(observation);
    } finally {
      if (observation[0] != null) {
        observation[0].cancel();
      }
    }
  }

  private int acquire(Subscription[] observation) throws InterruptedException {
    long start = System.nanoTime();
    boolean told = false;
    String lastProblem = null; // what the store's last failure said, printed once until it changes
    int failures = 0;
    for (; ; ) {
      if (stopRequested) {
        return INTERRUPTED;
      }
      Throwable error = null;
      boolean won = false;
      try {
        won = lease.acquire().get();
      } catch (ExecutionException e) {
        error = e.getCause();
      }
      if (won) {
        if (lastProblem != null) {
          say("reached the store again");
        }
        return -1;
      }
      String refusal = error == null ? null : Errors.denied(error);
      if (refusal != null) {
        // Definite, with --wait too: waiting does not grant a right.
        say("lease '" + lease.name() + "': permission denied: " + refusal);
        return DENIED;
      }
      String holder = lease.lastKnownHolder().map(h -> "held by " + h).orElse("held by another holder");
      if (!wait) {
        if (error != null) {
          say("could not find out whether lease '" + lease.name() + "' is free: "
              + Errors.describe(error));
          return UNAVAILABLE;
        }
        say("lease '" + lease.name() + "' is " + holder
            + "; not running the command (add --wait to wait for it)");
        return HELD_ELSEWHERE;
      }
      if (error != null) {
        String problem = Errors.describe(error);
        if (!problem.equals(lastProblem)) { // not the same line every few seconds for ever
          say("could not reach the store for lease '" + lease.name() + "' (" + problem
              + "); still trying" + (timeout != null ? " for up to " + Durations.format(timeout) : ""));
        }
        lastProblem = problem;
      } else {
        if (observation[0] == null && observeOn != null) {
          observation[0] = observe();
        }
        if (!told) {
          say("lease '" + lease.name() + "' is " + holder + "; waiting for it"
              + (timeout != null ? " for up to " + Durations.format(timeout) : ""));
          told = true;
        }
        lastProblem = null;
      }
      long pause = backoff(failures++);
      if (timeout != null) {
        long left = start + timeout.toNanos() - System.nanoTime();
        if (left <= 0) {
          if (error != null) {
            // Nobody was seen holding it: the store did not answer (exit 69, not 75).
            say("gave up waiting for lease '" + lease.name() + "' after "
                + Durations.format(timeout) + ": the store did not answer (" + lastProblem + ")");
            return UNAVAILABLE;
          }
          say("gave up waiting for lease '" + lease.name() + "' after "
              + Durations.format(timeout) + "; it is " + holder);
          return HELD_ELSEWHERE;
        }
        pause = Math.min(pause, left);
      }
      Object nudge = nudges.poll(pause, TimeUnit.NANOSECONDS);
      if (nudge == FREED) {
        // Told the lease is free: ask again after a small jitter, not after the backoff, so that
        // waiters told at once do not all ask at once.
        long base = Math.min(lease.settings().retryInterval().toNanos(), MAX_JITTER_BASE);
        nudge = nudges.poll(ThreadLocalRandom.current().nextLong(base / 4 + 1), TimeUnit.NANOSECONDS);
        nudges.removeIf(n -> n == FREED);
      }
      if (nudge == STOP || stopRequested) {
        return INTERRUPTED;
      }
    }
  }

  /**
   * Observes the lease while waiting; a free event ends the current pause. An observation is how
   * the waiter learns quickly, not what decides: acquire() alone does.
   */
  private Subscription observe() {
    try {
      return observeOn.observe(
          lease.name(),
          event -> {
            if (event.leavesLeaseFree()) {
              nudges.add(FREED);
            }
          });
    } catch (UnsupportedOperationException e) {
      return () -> {}; // this backend cannot observe: poll with the backoff
    } catch (RuntimeException e) {
      say("cannot observe lease '" + lease.name() + "' (" + Errors.describe(e)
          + "); asking for it with a backoff");
      return () -> {};
    }
  }

  /** Between the lease's retry interval and its heartbeat, doubling, with jitter. */
  private long backoff(int failures) {
    long first = lease.settings().retryInterval().toNanos();
    long max = Math.max(first, lease.settings().heartbeatInterval().toNanos());
    long d = first;
    for (int i = 0; i < failures && d < max; i++) {
      d = Math.min(max, d * 2);
    }
    return d / 2 + ThreadLocalRandom.current().nextLong(d / 2 + 1);
  }

  private int runHeld() throws InterruptedException {
    OptionalLong token = lease.fencingToken();
    ProcessGroup started;
    synchronized (this) {
      if (loss != null || token.isEmpty() || stopRequested) {
        say("lease '" + lease.name() + "' was lost before the command started; not running it");
        return LOST;
      }
      try {
        started = ProcessGroup.start(
            command,
            Map.of(
                "LEASEHOLD_LEASE", lease.name(),
                "LEASEHOLD_OWNER", lease.owner(),
                "LEASEHOLD_FENCING_TOKEN", Long.toString(token.getAsLong())));
      } catch (IOException e) {
        say(Errors.describe(e));
        release();
        return CANNOT_START;
      }
      group = started;
      lostToken = token.getAsLong();
    }
    int status = started.waitFor();
    LeaseLost lostWith;
    synchronized (this) {
      finished = true;
      lostWith = loss;
    }
    if (lostWith != null) {
      stopped.await(); // SIGKILL to what is left of the group has gone out
      say("the command was stopped because lease '" + lease.name() + "' was lost; exit "
          + LOST);
      release(); // a no-op after a loss, unless a loss was the stop
      return LOST;
    }
    release();
    return status;
  }

  /** The lease's onLost handler: SIGTERM at once, SIGKILL after the grace, off this thread. */
  private void onLost(LeaseLost reason) {
    ProcessGroup g;
    long token;
    synchronized (this) {
      if (finished || loss != null) {
        return;
      }
      loss = reason;
      g = group;
      token = lostToken;
    }
    if (g == null) {
      return; // before the command started: runHeld() sees the loss
    }
    say("lost lease '" + lease.name() + "' (token " + token + "): " + reason
        + "; sending SIGTERM to the command's process group " + g.pid() + ", SIGKILL after "
        + Durations.format(grace));
    Thread stopper = new Thread(() -> stop(g), "leasehold-run-stopper");
    stopper.setDaemon(true);
    stopper.start();
  }

  /** SIGTERM now; SIGKILL to the whole group when the command exits or the grace ends. */
  private void stop(ProcessGroup g) {
    try {
      g.signal("TERM");
      g.waitFor(grace.toNanos());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      g.signal("KILL"); // also whatever the command left behind in its group
      stopped.countDown();
    }
  }

  /**
   * For the JVM's shutdown hook (SIGINT, SIGTERM to {@code leasehold run}): the command is in its
   * own session, so the terminal's signals do not reach it; pass the stop on, then wait until the
   * lease is released.
   */
  void shutdown() {
    stopRequested = true;
    nudges.add(STOP);
    ProcessGroup g;
    synchronized (this) {
      g = finished ? null : group;
    }
    try {
      if (g != null && g.isAlive()) {
        g.signal("TERM");
        if (!g.waitFor(grace.toNanos())) {
          g.signal("KILL");
        }
      }
      done.await(lease.settings().ttl().toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void release() {
    try {
      lease.release().get(lease.settings().ttl().toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException | CompletionException e) {
      say("could not confirm the release of lease '" + lease.name() + "' (" + Errors.describe(e)
          + "); the store lets it expire within " + Durations.format(lease.settings().ttl()));
    } catch (TimeoutException e) {
      say("no answer to the release of lease '" + lease.name() + "'; the store lets it expire"
          + " within " + Durations.format(lease.settings().ttl()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void say(String message) {
    synchronized (err) {
      err.println("leasehold run: " + message);
      err.flush();
    }
  }
}
