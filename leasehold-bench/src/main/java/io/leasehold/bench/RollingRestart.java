package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.cli.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;

/**
 * {@code rolling-restart}: what a rolling restart costs the clients of a core cluster. {@code
 * leases} leases are held through {@code clients} backends (the normal holder engine renews them)
 * while a {@link Trickle} of acquires from another client measures how long a write can be held
 * up; then each member in turn is stopped with SIGTERM ({@link ManagedCluster#stop}: a leader hands
 * over first), started again on its data, and waited for until it serves and has applied what the
 * leader had applied when it came back, before the next. Reports the losses ({@code onLost}; must
 * be 0), the worst write stall (the slowest trickle acquire started during the roll) and each
 * member's restart time.
 */
final class RollingRestart {

  /**
   * What to run.
   *
   * @param clients backends the leases are spread over (one session each)
   * @param leases leases held through the roll
   * @param ttl their TTL
   * @param window acquires in flight per client during the setup
   * @param setupTimeout after this long the setup starts no more acquires
   * @param settle how long the leases are held before the first restart and between restarts
   * @param after how long they are still watched after the last restart (a loss shows within
   *     a TTL)
   * @param trickleInterval how often the trickle starts an acquire
   * @param catchUpTimeout how long a restarted member may take to catch up with the leader
   */
  record Params(
      int clients,
      int leases,
      Duration ttl,
      int window,
      Duration setupTimeout,
      Duration settle,
      Duration after,
      Duration trickleInterval,
      Duration catchUpTimeout) {}

  private static final int SETUP_ATTEMPTS = 3;

  private final ManagedCluster cluster;
  private final ClientFactory clients;
  private final Params params;
  private final String runId = RunIds.next();
  private final ErrorCounts errors = new ErrorCounts();
  private final ErrorCounts lossKinds = new ErrorCounts();
  private final LongAdder losses = new LongAdder();
  /** When each loss was seen (System.nanoTime), for the timeline in the JSON file. */
  private final java.util.Queue<Long> lossTimes = new java.util.concurrent.ConcurrentLinkedQueue<>();

  RollingRestart(ManagedCluster cluster, ClientFactory clients, Params params) {
    this.cluster = cluster;
    this.clients = clients;
    this.params = params;
  }

  Result run() throws InterruptedException {
    List<LeaseBackend> backends = new ArrayList<>();
    try {
      for (int c = 0; c < params.clients(); c++) {
        backends.add(clients.open());
      }
      Lease[] leases = new Lease[params.leases()];
      for (int i = 0; i < leases.length; i++) {
        Lease lease = backends.get(i % backends.size()).newLease(
            LeaseSettings.builder("bench-roll-" + runId + "-" + i, "bench-c" + (i % backends.size())).ttl(params.ttl()).build());
        lease.onLost(lost -> {
          losses.increment();
          lossTimes.add(System.nanoTime());
          lossKinds.record(lost.kind().toString());
        });
        leases[i] = lease;
      }
      long setupStart = System.nanoTime();
      acquireAll(leases, backends.size(), setupStart + params.setupTimeout().toNanos());
      double setupSeconds = (System.nanoTime() - setupStart) / 1e9;
      long held = alive(leases);
      long lossesBeforeRoll = losses.sum();

      List<Map<String, Object>> nodes = new ArrayList<>();
      Histogram before;
      List<Trickle.Sample> during;
      long rollStart;
      long rollEnd;
      int unanswered;
      try (LeaseBackend trickleBackend = clients.open();
          Trickle trickle = new Trickle(trickleBackend, params.trickleInterval(), Trickle.MAX_IN_FLIGHT, errors)) {
        TimeUnit.NANOSECONDS.sleep(params.settle().toNanos());
        rollStart = System.nanoTime();
        for (int i = 0; i < cluster.members().size(); i++) {
          long lossesBefore = losses.sum();
          Map<String, Object> n = new LinkedHashMap<>();
          n.put("sigterm_at_ms", (System.nanoTime() - rollStart) / 1e6);
          restartOne(i, n);
          TimeUnit.NANOSECONDS.sleep(params.settle().toNanos());
          n.put("losses_until_next", losses.sum() - lossesBefore);
          nodes.add(n);
        }
        rollEnd = System.nanoTime();
        // A lease whose renewals the roll held up past its safe deadline is lost within a TTL.
        MeasureWindow.sleepUntil(rollEnd + params.after().toNanos());
        trickle.stop(Trickle.OPERATION_TIMEOUT.plusSeconds(5));
        before = Trickle.histogram(trickle.startedBetween(rollStart - params.settle().toNanos(), rollStart));
        during = trickle.startedBetween(rollStart, rollEnd);
        for (int i = 0; i < nodes.size(); i++) {
          long sigterm = sigtermNanos(nodes.get(i), rollStart);
          long until = i + 1 < nodes.size() ? sigtermNanos(nodes.get(i + 1), rollStart) : rollEnd;
          worstStall(nodes.get(i), sigterm, trickle.startedBetween(sigterm, until));
        }
        unanswered = trickle.unanswered();
      }
      Histogram stall = Trickle.histogram(during);
      long failedDuring = during.stream().filter(s -> !s.acquired()).count();

      Result r = new Result("rolling-restart", cluster.name())
          .param("clients", params.clients())
          .param("leases", params.leases())
          .param("ttl", Durations.format(params.ttl()))
          .param("settle", Durations.format(params.settle()))
          .param("trickle_interval", Durations.format(params.trickleInterval()));
      r.figure("setup_s", "setup: time to acquire every lease", setupSeconds, "s");
      r.figure("held", "leases held when the roll started", held, "");
      r.figure("spurious_losses", "leases lost (onLost, from the setup to " + Durations.format(params.after())
          + " after the last restart; must be 0)", losses.sum(), "");
      r.figure("losses_during_setup", "  of which before the first restart", lossesBeforeRoll, "");
      r.figure("held_at_end", "leases still held at the end", alive(leases), "");
      r.figure("worst_stall_ms", "worst write stall: the slowest trickle acquire started during the roll",
          stall.getTotalCount() == 0 ? Double.NaN : Latency.ms(stall.getMaxValue()), "ms");
      Latency.addTo(r, "trickle_before", "trickle acquire before the roll", before);
      Latency.addTo(r, "stall", "trickle acquire during the roll", stall);
      r.figure("stall_failed", "trickle acquires that failed during the roll", failedDuring, "");
      r.figure("trickle_unanswered", "trickle acquires never answered", unanswered, "");
      double worstRestart = 0;
      for (Map<String, Object> n : nodes) {
        String id = (String) n.get("id");
        String role = Boolean.TRUE.equals(n.get("led")) ? " (led; next leader " + n.get("leader_after_stop") + ")" : "";
        r.figure(id + "_stop_ms", id + role + ": SIGTERM -> exited", (double) n.get("stop_ms"), "ms");
        r.figure(id + "_restart_ms", id + ": SIGTERM -> serving again and caught up", (double) n.get("restart_ms"), "ms");
        r.figure(id + "_losses", id + ": leases lost from its SIGTERM until the next one's", (long) n.get("losses_until_next"), "");
        r.figure(id + "_worst_stall_ms", id + ": worst write stall from its SIGTERM until the next one's, started "
            + n.get("worst_stall_phase"), (double) n.get("worst_stall_ms"), "ms");
        worstRestart = Math.max(worstRestart, (double) n.get("restart_ms"));
      }
      r.figure("restart_max_ms", "slowest member restart (SIGTERM -> caught up)", nodes.isEmpty() ? Double.NaN : worstRestart, "ms");
      r.figure("errors", "errors", errors.total(), "");
      r.detail("nodes", nodes);
      // Losses per second since the roll started: which stop they follow.
      Map<Long, Long> timeline = new java.util.TreeMap<>();
      for (long at : lossTimes) {
        timeline.merge(Math.floorDiv(at - rollStart, 1_000_000_000L), 1L, Long::sum);
      }
      r.detail("losses_per_second_since_roll_start", timeline);
      r.detail("loss_kinds", lossKinds.byKind());
      r.note("each member in turn: SIGTERM (a leader hands over first), started again on its data, then waited for"
          + " until it serves and has applied the leader's applied index as read when it came back; "
          + Durations.format(params.settle()) + " held before the first restart and after each");
      return r.errors(errors);
    } finally {
      for (LeaseBackend b : backends) {
        b.close();
      }
    }
  }

  /** Stops member {@code i} with SIGTERM, starts it again and waits until it has caught up; notes in {@code n}. */
  private void restartOne(int i, Map<String, Object> n) throws InterruptedException {
    String id = cluster.members().get(i).id();
    n.put("id", id);
    Optional<Integer> leader = cluster.leader();
    n.put("led", leader.isPresent() && leader.get() == i);
    long t0 = System.nanoTime();
    cluster.stop(i);
    long stopped = System.nanoTime();
    n.put("stop_ms", (stopped - t0) / 1e6);
    n.put("leader_after_stop", cluster.leader().map(l -> cluster.members().get(l).id()).orElse("none yet"));
    cluster.restart(i);
    long serving = System.nanoTime();
    n.put("start_ms", (serving - stopped) / 1e6);
    long caughtUp = awaitCaughtUp(i, id);
    n.put("catch_up_ms", (caughtUp - serving) / 1e6);
    n.put("restart_ms", (caughtUp - t0) / 1e6);
  }

  /** {@return when node {@code n} was sent its SIGTERM, on System.nanoTime(), from its {@code sigterm_at_ms}} */
  private static long sigtermNanos(Map<String, Object> n, long rollStart) {
    return rollStart + (long) ((double) n.get("sigterm_at_ms") * 1e6);
  }

  /**
   * Adds to {@code n} the slowest of {@code samples} (the trickle's acquires started from this
   * member's SIGTERM until the next member's) and the step of its restart it started in: which
   * step stalls writes (the hand-over, the member's absence, its start or its catch-up) says where
   * to look.
   */
  private static void worstStall(Map<String, Object> n, long sigterm, List<Trickle.Sample> samples) {
    Trickle.Sample worst = null;
    for (Trickle.Sample s : samples) {
      if (worst == null || s.latencyNanos() > worst.latencyNanos()) {
        worst = s;
      }
    }
    if (worst == null) {
      n.put("worst_stall_ms", Double.NaN);
      n.put("worst_stall_phase", "(no acquire started)");
      return;
    }
    double at = (worst.startNanos() - sigterm) / 1e6;
    double stopped = (double) n.get("stop_ms");
    double serving = stopped + (double) n.get("start_ms");
    double caughtUp = (double) n.get("restart_ms");
    String phase =
        at < stopped ? "while it stopped" : at < serving ? "while it was down or starting" : at < caughtUp ? "while it caught up" : "after it caught up";
    n.put("worst_stall_ms", worst.latencyNanos() / 1e6);
    n.put("worst_stall_started_ms_after_sigterm", at);
    n.put("worst_stall_phase", phase);
  }

  /**
   * Waits until member {@code i} has applied what the leader had applied once {@code i} served
   * again ({@link ManagedCluster#awaitCaughtUp}; the command runs on the core only, which tells
   * it). {@return when}
   */
  private long awaitCaughtUp(int i, String id) throws InterruptedException {
    if (!cluster.awaitCaughtUp(i, System.nanoTime() + params.catchUpTimeout().toNanos())) {
      throw new IllegalStateException("rolling-restart: " + id + " did not apply what the leader had applied when it"
          + " came back within " + Durations.format(params.catchUpTimeout()));
    }
    return System.nanoTime();
  }

  private static long alive(Lease[] leases) {
    long n = 0;
    for (Lease l : leases) {
      if (l.checkAlive()) {
        n++;
      }
    }
    return n;
  }

  /** Acquires every lease, lease i through client {@code i % clients}, {@code window} in flight per client. */
  private void acquireAll(Lease[] leases, int clientCount, long stopStarting) throws InterruptedException {
    List<Thread> drivers = new ArrayList<>();
    for (int c = 0; c < clientCount; c++) {
      int client = c;
      Thread t = new Thread(() -> {
        Semaphore inFlight = new Semaphore(params.window());
        try {
          for (int i = client; i < leases.length; i += clientCount) {
            inFlight.acquire();
            if (System.nanoTime() - stopStarting > 0) {
              inFlight.release();
              errors.record("setup acquire not started: the setup timeout passed");
              continue;
            }
            attempt(leases[i], 1).whenComplete((ok, e) -> inFlight.release());
          }
          inFlight.acquire(params.window());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "bench-roll-setup-" + c);
      t.setDaemon(true);
      drivers.add(t);
      t.start();
    }
    for (Thread t : drivers) {
      t.join();
    }
  }

  private CompletableFuture<Boolean> attempt(Lease lease, int n) {
    return lease.acquire()
        .handle((ok, error) -> {
          if (error == null && ok) {
            return CompletableFuture.completedFuture(true);
          }
          errors.record(error != null ? "setup acquire: " + ErrorCounts.kind(error) : "setup acquire refused");
          return n < SETUP_ATTEMPTS ? attempt(lease, n + 1) : CompletableFuture.completedFuture(false);
        })
        .thenCompose(f -> f);
  }
}
