package io.leasehold.bench;

import io.leasehold.LeaseBackend;
import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.cli.Durations;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.HdrHistogram.Histogram;

/**
 * {@code expire-storm}: many leases expire at once. {@code holders} processes of their own ({@link
 * StormHolderChild}) acquire {@code leases} leases between them, one backend (one session per TTL)
 * each; then the bench kills them all with SIGKILL, so no lease is released and every keep-alive
 * stops in the same instant. It measures, from the store's own count of held leases ({@link
 * ManagedCluster#heldLeases()}), when the first of them is gone and when all are, and meanwhile the
 * latency of a steady trickle of acquires from another client (the stall an application sees while
 * the store cleans up).
 *
 * <p>The count is every client's: the trickle's own leases are in it, at most {@link
 * Trickle#outstanding()} of them. So "a storm lease is gone" is taken when the count falls below
 * what the storm held at the kill, and "all are gone" when it is at most the trickle's outstanding
 * acquires. All three stores delete a session's leases in one step (the core's expiry entry, etcd's
 * lease revoke, ZooKeeper's session close), so as long as each holder holds more than twice what
 * the trickle may have in flight, neither test can be fooled by the trickle's own leases: the
 * trickle's cap is {@link Trickle#MAX_IN_FLIGHT}, lowered when a holder acquired fewer than {@link
 * #MIN_LEASES_PER_HOLDER} leases.
 */
final class ExpireStorm {

  /**
   * What to run.
   *
   * @param leases leases that expire together
   * @param holders processes that hold them (each a session)
   * @param ttl their TTL (and, on ZooKeeper, the holders' session timeout)
   * @param window acquires in flight per holder during the setup
   * @param setupTimeout how long the holders may take to acquire
   * @param trickleInterval how often the trickle starts an acquire
   * @param baseline how long the trickle runs before the kill, for its latency without the storm
   * @param drainTimeout after kill + TTL, how long to wait for every lease to be gone
   */
  record Params(
      int leases,
      int holders,
      Duration ttl,
      int window,
      Duration setupTimeout,
      Duration trickleInterval,
      Duration baseline,
      Duration drainTimeout) {}

  /** Each holder's share must exceed the trickle's greatest share of the count, twice over (see above). */
  static final int MIN_LEASES_PER_HOLDER = 2 * Trickle.MAX_IN_FLIGHT + 1;

  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  /** How long the trickle goes on after all are gone: a stall may outlast the count. */
  private static final long TAIL_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final ManagedCluster cluster;
  private final ClientFactory clients;
  private final String storeName;
  private final Params params;
  private final ErrorCounts errors = new ErrorCounts();

  ExpireStorm(ManagedCluster cluster, ClientFactory clients, String storeName, Params params) {
    this.cluster = cluster;
    this.clients = clients;
    this.storeName = storeName;
    this.params = params;
  }

  /**
   * {@return the URI the holders open} ZooKeeper frees a dead holder's leases when its session
   * expires, not after the lease's TTL (docs/zookeeper.md: set the TTL equal to the session
   * timeout), so the holders ask for a session timeout of the TTL; the other stores' URIs are used
   * as they are.
   */
  static String holderUri(String uri, Duration ttl) {
    if (!uri.startsWith("zookeeper://")) {
      return uri;
    }
    String base = uri.replaceAll("[?&]sessionTimeout=[^&]*", "");
    return base + (base.contains("?") ? "&" : "?") + "sessionTimeout=" + ttl.toMillis() + "ms";
  }

  Result run() throws InterruptedException {
    try {
      return measure();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("expire-storm: " + e.getMessage(), e);
    }
  }

  private Result measure() throws InterruptedException, IOException {
    String runId = RunIds.next();
    long base = count().orElseThrow(() -> new IllegalStateException("the " + storeName + " cluster cannot count its held leases"));
    String uri = holderUri(cluster.backendUri(), params.ttl());
    List<StormHolderChild> children = new ArrayList<>();
    Map<String, Object> detail = new LinkedHashMap<>();
    long setupStart = System.nanoTime();
    long held = 0;
    Path logs = Files.createTempDirectory("leasehold-bench-storm-holders-");
    boolean keepLogs = false;
    try {
      int per = params.leases() / params.holders();
      int extra = params.leases() % params.holders();
      for (int k = 0; k < params.holders(); k++) {
        int n = per + (k < extra ? 1 : 0);
        children.add(StormHolderChild.start(uri, "bench-storm-" + runId + "-h" + k + "-", n, params.ttl(),
            params.window(), params.setupTimeout(), logs.resolve("holder-" + k + ".log")));
      }
      long failedSetup = 0;
      long leastShare = Long.MAX_VALUE; // the fewest leases a holder that holds any holds
      for (StormHolderChild c : children) {
        try {
          StormHolderChild.Report report = c.awaitHeld(params.setupTimeout().plus(Duration.ofSeconds(60)));
          held += report.held();
          if (report.held() > 0) {
            leastShare = Math.min(leastShare, report.held());
          }
          failedSetup += report.failed();
          report.errors().forEach((kind, n) -> {
            for (long i = 0; i < n; i++) {
              errors.record(kind);
            }
          });
        } catch (IOException | TimeoutException e) {
          keepLogs = true;
          throw new IllegalStateException("expire-storm setup failed: " + e.getMessage() + "; the holders' logs are in " + logs, e);
        }
      }
      if (held == 0) {
        keepLogs = true;
        throw new IllegalStateException("expire-storm: the holders acquired none of the " + params.leases() + " leases ("
            + errors.byKind() + "); their logs are in " + logs);
      }
      double setupSeconds = (System.nanoTime() - setupStart) / 1e9;

      // A holder's leases go at once; its share must stay above twice the trickle's (see above),
      // also when a busy machine let a holder acquire fewer than it was asked to.
      int trickleCap = (int) Math.max(1, Math.min(Trickle.MAX_IN_FLIGHT, (leastShare - 1) / 2));
      try (LeaseBackend trickleBackend = clients.open();
          Trickle trickle = new Trickle(trickleBackend, params.trickleInterval(), trickleCap, errors)) {
        TimeUnit.NANOSECONDS.sleep(params.baseline().toNanos());
        long countBefore = count().orElse(-1) - base;
        int outstandingAtKill = trickle.outstanding();
        // At most outstandingAtKill of the count are the trickle's: below this, a storm lease is gone.
        long stormAtKill = countBefore - outstandingAtKill;
        ResourceMeter meter = new ResourceMeter(Optional.of(cluster));
        meter.start();
        long killedAt = System.nanoTime();
        for (StormHolderChild c : children) {
          c.kill();
        }
        for (StormHolderChild c : children) {
          c.awaitGone();
        }
        long dead = System.nanoTime();

        long firstGone = -1;
        long allGone = -1;
        long countFailures = 0;
        List<List<Object>> series = new ArrayList<>();
        long lastSeries = 0;
        long deadline = killedAt + params.ttl().toNanos() + params.drainTimeout().toNanos();
        while (System.nanoTime() - deadline < 0) {
          long asked = System.nanoTime();
          OptionalLong c = count();
          long now = System.nanoTime();
          int outstanding = trickle.outstanding();
          if (c.isEmpty()) {
            countFailures++;
          } else {
            long v = c.getAsLong() - base;
            if (now - lastSeries > TimeUnit.MILLISECONDS.toNanos(250)) {
              series.add(List.of(Math.round((now - killedAt) / 1e6), v));
              lastSeries = now;
            }
            if (firstGone < 0 && v < stormAtKill) {
              firstGone = now;
            }
            if (v <= outstanding) {
              allGone = now;
              series.add(List.of(Math.round((now - killedAt) / 1e6), v));
              break;
            }
          }
          long wait = asked + POLL_NANOS - System.nanoTime();
          if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
          }
        }
        meter.stop();
        long stormEnd = (allGone > 0 ? allGone : System.nanoTime()) + TAIL_NANOS;
        MeasureWindow.sleepUntil(stormEnd);
        trickle.stop(Trickle.OPERATION_TIMEOUT.plusSeconds(5));

        Histogram before = Trickle.histogram(trickle.startedBetween(killedAt - params.baseline().toNanos(), killedAt));
        List<Trickle.Sample> during = trickle.startedBetween(killedAt, stormEnd);
        Histogram storm = Trickle.histogram(during);
        long failedDuring = during.stream().filter(s -> !s.acquired()).count();

        Result r = new Result("expire-storm", storeName)
            .param("leases", params.leases())
            .param("holders", params.holders())
            .param("ttl", Durations.format(params.ttl()))
            .param("holder_uri", uri)
            .param("trickle_interval", Durations.format(params.trickleInterval()));
        r.figure("setup_s", "setup: holders started and every lease acquired", setupSeconds, "s");
        r.figure("held", "leases held by the holders at the kill", held, "");
        r.figure("setup_failed", "leases the holders could not acquire", failedSetup, "");
        r.figure("store_count_at_kill", "held leases the store counted at the kill (the trickle's included)", countBefore, "");
        r.figure("trickle_outstanding_at_kill", "  of which the trickle's, at most", outstandingAtKill, "");
        r.figure("kill_call_ms", "SIGKILL of every holder until all were gone", (dead - killedAt) / 1e6, "ms");
        r.figure("first_gone_s", "kill -> the first storm lease gone", seconds(firstGone, killedAt), "s");
        r.figure("all_gone_s", "kill -> all storm leases gone", seconds(allGone, killedAt), "s");
        r.figure("drain_s", "drain: the first gone -> all gone", allGone > 0 && firstGone > 0 ? (allGone - firstGone) / 1e9 : Double.NaN, "s");
        r.figure("all_gone_after_ttl_s", "all gone, after kill + TTL", allGone > 0 ? (allGone - killedAt - params.ttl().toNanos()) / 1e9 : Double.NaN, "s");
        Latency.addTo(r, "trickle_before", "trickle acquire before the kill", before);
        Latency.addTo(r, "stall", "trickle acquire from the kill until 1 s after all were gone", storm);
        r.figure("stall_failed", "trickle acquires that failed in that time", failedDuring, "");
        r.figure("trickle_unanswered", "trickle acquires never answered", trickle.unanswered(), "");
        r.figure("server_cpu_cores", "server CPU from the kill until all were gone (all members)",
            meter.serverCpuNanos() / 1e9 / meter.seconds(), "cores");
        r.figure("count_failures", "polls of the store's count that got no answer", countFailures, "");
        r.figure("errors", "errors", errors.total(), "");
        if (allGone < 0) {
          r.note(String.format(Locale.ROOT, "not all leases were gone %s after kill + TTL (%s)",
              Durations.format(params.drainTimeout()), Durations.format(params.ttl())));
        }
        if (trickle.skipped() > 0) {
          r.note("the trickle skipped " + trickle.skipped() + " acquires: " + trickleCap + " were in flight");
        }
        detail.put("count_ms_after_kill", series);
        r.detail("count", detail);
        return r.errors(errors);
      }
    } finally {
      for (StormHolderChild c : children) {
        c.close();
      }
      if (!keepLogs) {
        deleteLogs(logs);
      }
    }
  }

  private static void deleteLogs(Path dir) {
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        Files.deleteIfExists(f);
      }
      Files.deleteIfExists(dir);
    } catch (IOException ignored) {
      // a few small files left in the temporary directory
    }
  }

  private static double seconds(long at, long from) {
    return at > 0 ? (at - from) / 1e9 : Double.NaN;
  }

  private OptionalLong count() {
    try {
      return cluster.heldLeases();
    } catch (RuntimeException e) {
      errors.record("count", e);
      return OptionalLong.empty();
    }
  }
}
