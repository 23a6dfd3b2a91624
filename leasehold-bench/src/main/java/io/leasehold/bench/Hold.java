package io.leasehold.bench;

import io.leasehold.cli.Durations;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.ManagedCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The {@code hold} workload: acquires {@code leases} leases through {@code clients} backend
 * instances (round robin), holds them for the warm-up and the measured duration while {@link
 * RenewalSampler} counts their renewals, then releases them. Measures the setup, renewals per
 * second, spurious losses ({@code onLost}; must be 0), this JVM's CPU, and, on a cluster the bench
 * started, the members' CPU and resident memory.
 */
final class Hold {

  /**
   * What to run.
   *
   * @param clients backend instances the leases are spread over
   * @param leases how many leases to hold
   * @param ttl their TTL
   * @param heartbeat their renewal interval, or null for the library's default (ttl / 3)
   * @param window acquires and releases in flight per client during setup and teardown
   * @param setupTimeout after this long the setup starts no more acquires and the run goes on with
   *     the leases it holds
   * @param warmup time held before measuring
   * @param duration time measured
   * @param release whether to release every lease at the end and time it; without, closing the
   *     backends gives them up (at most one operation timeout), which is enough when the cluster is
   *     stopped next anyway
   * @param flood with it, a second phase measures the same leases again while other clients flood
   *     the store with writes; null for none
   */
  record Params(
      int clients,
      int leases,
      Duration ttl,
      Duration heartbeat,
      int window,
      Duration setupTimeout,
      Duration warmup,
      Duration duration,
      boolean release,
      Flood flood) {}

  /**
   * The write flood of the second phase: acquire-release cycles from clients of their own, as fast
   * as the store answers them.
   *
   * @param clients backend instances of the flood
   * @param window leases in flight per flooding client
   * @param ttl the flooding leases' TTL
   */
  record Flood(int clients, int window, Duration ttl) {

    /** {@code hold --flood} and compare: 4 clients x 32 leases in flight, TTL 10 s. */
    static final Flood DEFAULT = new Flood(4, 32, Duration.ofSeconds(10));
  }

  private static final int SETUP_ATTEMPTS = 3;

  private final ClientFactory factory;
  private final String storeName;
  private final Params params;
  private final Optional<ManagedCluster> cluster;
  private final String runId = RunIds.next();
  private final LongAdder losses = new LongAdder();
  private final ErrorCounts errors = new ErrorCounts();
  private final ErrorCounts lossKinds = new ErrorCounts();
  private final LongAdder skipped = new LongAdder();

  Hold(ClientFactory factory, String storeName, Optional<ManagedCluster> cluster, Params params) {
    this.factory = factory;
    this.storeName = storeName;
    this.cluster = cluster;
    this.params = params;
  }

  Result run() throws InterruptedException {
    List<LeaseBackend> backends = new ArrayList<>();
    try {
      for (int c = 0; c < params.clients(); c++) {
        backends.add(factory.open());
      }
      Lease[] leases = new Lease[params.leases()];
      for (int i = 0; i < leases.length; i++) {
        LeaseSettings.Builder s = LeaseSettings.builder("bench-hold-" + runId + "-" + i, "bench-c" + (i % backends.size()))
            .ttl(params.ttl());
        if (params.heartbeat() != null) {
          s.heartbeatInterval(params.heartbeat());
        }
        Lease lease = backends.get(i % backends.size()).newLease(s.build());
        lease.onLost(lost -> {
          losses.increment();
          lossKinds.record(lost.kind().toString());
        });
        leases[i] = lease;
      }
      Duration heartbeat = leases.length > 0 ? leases[0].settings().heartbeatInterval() : params.ttl().dividedBy(3);
      Duration safeWindow = leases.length > 0 ? leases[0].settings().safeWindow() : params.ttl();
      Optional<ClusterStats> idle = cluster.map(ClusterStats::sample);

      long setupStart = System.nanoTime();
      long setupDeadline = setupStart + params.setupTimeout().toNanos();
      long acquired = inParallel(leases, backends.size(), this::acquire, "setup acquire", setupDeadline);
      double setupSeconds = (System.nanoTime() - setupStart) / 1e9;
      long held = 0;
      for (int i = 0; i < leases.length; i++) {
        if (leases[i].checkAlive()) {
          held++;
        } else {
          leases[i] = null; // never acquired, or already lost: nothing to sample
        }
      }

      MeasureWindow window = MeasureWindow.startingNow(params.warmup(), params.duration());
      MeasureWindow.sleepUntil(window.measureFrom());
      ResourceMeter meter = new ResourceMeter(cluster);
      meter.start();
      RenewalSampler sampler = new RenewalSampler(leases, heartbeat);
      sampler.run(window.measureUntil());
      meter.stop();
      double seconds = meter.seconds();
      Optional<ClusterStats> end = cluster.map(ClusterStats::sample);
      long aliveAtEnd = aliveCount(leases);
      long lossesQuiet = losses.sum();

      Result flooded = null;
      if (params.flood() != null) {
        flooded = flood(leases, heartbeat);
      }
      double teardownSeconds = Double.NaN;
      if (params.release()) {
        long teardownStart = System.nanoTime();
        inParallel(leases, backends.size(), l -> l.release().thenApply(v -> true), "teardown release", Long.MAX_VALUE);
        teardownSeconds = (System.nanoTime() - teardownStart) / 1e9;
      }

      Result r = new Result("hold", storeName)
          .param("clients", params.clients())
          .param("leases", params.leases())
          .param("ttl", Durations.format(params.ttl()))
          .param("heartbeat", Durations.format(heartbeat))
          .param("window", params.window())
          .param("setup_timeout", Durations.format(params.setupTimeout()))
          .param("warmup", Durations.format(params.warmup()))
          .param("duration", Durations.format(params.duration()));
      r.figure("setup_s", "setup: time to acquire every lease", setupSeconds, "s");
      r.figure("setup_acquires_per_s", "setup: acquires", acquired / setupSeconds, "/s");
      r.figure("acquired", "leases acquired in setup", acquired, "");
      if (skipped.sum() > 0) {
        r.note(String.format(java.util.Locale.ROOT, "the setup timeout (%s) passed before %,d of the leases were tried; the run went on with the others",
            Durations.format(params.setupTimeout()), skipped.sum()));
      }
      r.figure("held", "leases held after setup", held, "");
      r.figure("offered_renewals_per_s", "renewals due (leases / heartbeat)", held / (heartbeat.toNanos() / 1e9), "/s");
      r.figure("renewals_per_s", "renewals reached (deadline advances)", sampler.advances() / seconds, "/s");
      r.figure("lowest_remaining_ms", "lowest remaining() seen (safe window " + safeWindow.toMillis() + " ms)",
          sampler.lowestRemainingNanos() < 0 ? Double.NaN : sampler.lowestRemainingNanos() / 1e6, "ms");
      r.figure("spurious_losses", "spurious losses (onLost, from the setup to the end; must be 0)", lossesQuiet, "");
      r.figure("held_at_end", "leases still held at the end", aliveAtEnd, "");
      meter.addTo(r, "", sampler.advances(), "renewal");
      if (end.isPresent() && idle.isPresent()) {
        r.figure("server_rss_bytes", "server memory (RSS, all members)", end.get().rssBytes(), "B");
        r.figure("server_rss_per_lease_bytes", "server memory per lease (RSS growth / leases, all members)",
            held == 0 ? Double.NaN : (double) end.get().rssBytesSince(idle.get()) / held, "B");
        r.detail("members_idle", idle.get().toJson());
        r.detail("members_end", end.get().toJson());
      } else {
        r.note("server CPU and memory are measured only on a cluster the bench started (--start)");
      }
      if (flooded != null) {
        flooded.figures().forEach(f -> r.figure(f.key(), f.label(), f.value(), f.unit()));
        flooded.notes().forEach(r::note);
        r.detail("flood_errors", flooded.errors());
      }
      r.figure("teardown_s", "teardown: time to release every lease", teardownSeconds, "s");
      r.figure("errors", "errors", errors.total(), "");
      r.detail("loss_kinds", lossKinds.byKind());
      r.detail("sampler", java.util.Map.of(
          "sweeps", sampler.sweeps(), "skipped_readings", sampler.skipped(), "not_held_readings", sampler.notHeldReadings()));
      return r.errors(errors);
    } finally {
      for (LeaseBackend b : backends) {
        b.close();
      }
    }
  }

  private static long aliveCount(Lease[] leases) {
    long alive = 0;
    for (Lease l : leases) {
      if (l != null && l.checkAlive()) {
        alive++;
      }
    }
    return alive;
  }

  /**
   * The second phase of {@code --flood}: the same leases, held on, measured again for the warm-up
   * and the duration while another set of clients floods the store with acquire-release cycles as
   * fast as it answers them. {@return the phase's figures, each key prefixed {@code flood_}}
   */
  private Result flood(Lease[] leases, Duration heartbeat) throws InterruptedException {
    Flood f = params.flood();
    long lossesBefore = losses.sum();
    AcquireRelease writes = new AcquireRelease("flood", factory, storeName, Optional.empty(),
        new AcquireRelease.Params(f.clients(), f.window(), f.ttl(), params.warmup(), params.duration()));
    FutureTask<Result> task = new FutureTask<>(writes::run);
    Thread thread = new Thread(task, "bench-hold-flood");
    thread.setDaemon(true);
    MeasureWindow window = MeasureWindow.startingNow(params.warmup(), params.duration());
    thread.start();
    Result r = new Result("hold", storeName);
    try {
      MeasureWindow.sleepUntil(window.measureFrom());
      ResourceMeter meter = new ResourceMeter(cluster);
      meter.start();
      RenewalSampler sampler = new RenewalSampler(leases, heartbeat);
      sampler.run(window.measureUntil());
      meter.stop();
      Result w;
      try {
        w = task.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException("the write flood failed: " + e.getCause(), e.getCause());
      }
      r.figure("flood_cycles_per_s", "flood: acquire+release cycles of the flooding clients", w.value("cycles_per_s"), "/s");
      r.figure("flood_acquire_p99_ms", "flood: the flooding clients' acquire p99", w.value("acquire_p99_ms"), "ms");
      r.figure("flood_errors", "flood: the flooding clients' errors", w.value("errors"), "");
      r.figure("flood_renewals_per_s", "flood: renewals reached (deadline advances)", sampler.advances() / meter.seconds(), "/s");
      r.figure("flood_lowest_remaining_ms", "flood: lowest remaining() seen",
          sampler.lowestRemainingNanos() < 0 ? Double.NaN : sampler.lowestRemainingNanos() / 1e6, "ms");
      r.figure("flood_spurious_losses", "flood: spurious losses (onLost, from the flood's start; must be 0)", losses.sum() - lossesBefore, "");
      r.figure("flood_held_at_end", "flood: leases still held at the end", aliveCount(leases), "");
      meter.addTo(r, "flood_", Double.NaN, "renewal");
      r.note(String.format(java.util.Locale.ROOT,
          "flood: %d clients x %d leases cycled acquire/release as fast as answered; its client CPU is in"
              + " the flood phase's client CPU", f.clients(), f.window()));
      return r;
    } finally {
      thread.interrupt();
      thread.join();
    }
  }

  private CompletableFuture<Boolean> acquire(Lease lease) {
    return attempt(lease, 1);
  }

  private CompletableFuture<Boolean> attempt(Lease lease, int n) {
    return lease.acquire()
        .handle((ok, error) -> {
          if (error == null && ok) {
            return CompletableFuture.completedFuture(true);
          }
          if (error != null) {
            errors.record("setup acquire", error);
          } else {
            errors.record("setup acquire refused");
          }
          return n < SETUP_ATTEMPTS ? attempt(lease, n + 1) : CompletableFuture.completedFuture(false);
        })
        .thenCompose(f -> f);
  }

  /**
   * Runs {@code op} on every lease, lease i on client {@code i % clients}, with at most {@code
   * window} in flight per client, starting none after {@code stopStarting} (System.nanoTime(), or
   * {@link Long#MAX_VALUE} for no limit). {@return how many completed true}
   */
  private long inParallel(
      Lease[] leases,
      int clients,
      java.util.function.Function<Lease, CompletableFuture<Boolean>> op,
      String what,
      long stopStarting)
      throws InterruptedException {
    LongAdder notStarted = new LongAdder();
    LongAdder ok = new LongAdder();
    List<Thread> drivers = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      int client = c;
      Thread t = new Thread(() -> {
        Semaphore inFlight = new Semaphore(params.window());
        try {
          for (int i = client; i < leases.length; i += clients) {
            Lease lease = leases[i];
            if (lease == null) {
              continue;
            }
            inFlight.acquire();
            if (stopStarting != Long.MAX_VALUE && System.nanoTime() - stopStarting > 0) {
              inFlight.release();
              notStarted.increment();
              continue;
            }
            CompletableFuture<Boolean> f;
            try {
              f = op.apply(lease);
            } catch (RuntimeException e) {
              errors.record(what, e);
              inFlight.release();
              continue;
            }
            f.whenComplete((result, error) -> {
              if (error != null) {
                errors.record(what, error);
              } else if (result) {
                ok.increment();
              }
              inFlight.release();
            });
          }
          inFlight.acquire(params.window()); // every operation answered
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, "bench-hold-" + what.replace(' ', '-') + "-" + c);
      t.setDaemon(true);
      drivers.add(t);
      t.start();
    }
    for (Thread t : drivers) {
      t.join();
    }
    if (notStarted.sum() > 0) {
      errors.record(what + " not started: the setup timeout passed");
      skipped.add(notStarted.sum());
    }
    return ok.sum();
  }
}
