package io.leasehold.bench;

import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.cli.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.DoubleStream;
import java.util.stream.LongStream;

/**
 * The {@code cold-start} workload: what a store does in its first seconds, beside what it does
 * warmed. On a cluster the bench has just started, {@code acquire-release} with no warm-up for
 * {@code phase}, second by second ({@code cold}); then the same after {@code warm} more of it
 * ({@code warm}); then, with {@code restart}, every member in turn killed and started again on its
 * data, and the same once more from the first second after the last one serves ({@code
 * restarted}: every server a fresh JVM, the bench's client JVM warm).
 */
final class ColdStart {

  /**
   * What to run.
   *
   * @param clients backend instances
   * @param window leases per client, one operation in flight each
   * @param ttl the leases' TTL
   * @param phase the length of each measured phase
   * @param warm how long the load runs between the cold phase and the warm one
   * @param restart whether to restart every member and measure again
   */
  record Params(int clients, int window, Duration ttl, Duration phase, Duration warm, boolean restart) {}

  /** A second counts as warm once it reaches this share of the warm phase's rate. */
  static final double WARM_SHARE = 0.8;

  private final Target target;
  private final Params params;

  ColdStart(Target target, Params params) {
    this.target = target;
    this.params = params;
  }

  /** Runs the phases and returns their figures. */
  Result run() throws InterruptedException {
    Result r = new Result("cold-start", target.storeName())
        .param("clients", params.clients())
        .param("window", params.window())
        .param("ttl", Durations.format(params.ttl()))
        .param("phase", Durations.format(params.phase()))
        .param("warm", Durations.format(params.warm()))
        .param("restart", params.restart());
    r.figure("start_to_serving_s", "cluster launched -> serving (a client write done)",
        target.startedIn().map(d -> d.toNanos() / 1e9).orElse(Double.NaN), "s");
    Phase cold = phase("cold", Duration.ZERO);
    Phase warm = phase("warm", params.warm());
    cold.addTo(r, warm);
    warm.addTo(r, null);
    r.figure("cold_to_warm_ratio", "cold: cycles/s / warm's", cold.cyclesPerSecond() / warm.cyclesPerSecond(), "x");
    Optional<ManagedCluster> cluster = target.cluster();
    if (params.restart() && cluster.isPresent()) {
      ManagedCluster c = cluster.get();
      List<Double> restartSeconds = new ArrayList<>();
      for (int i = 0; i < c.members().size(); i++) {
        long t0 = System.nanoTime();
        c.kill(i);
        c.restart(i);
        restartSeconds.add((System.nanoTime() - t0) / 1e9);
      }
      r.figure("restart_max_s", "restart: kill -> serving again, slowest member",
          restartSeconds.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN), "s");
      r.detail("restart_s_per_member", restartSeconds);
      Phase restarted = phase("restarted", Duration.ZERO);
      restarted.addTo(r, warm);
    }
    return r;
  }

  private Phase phase(String name, Duration warmup) throws InterruptedException {
    Timeline timeline = new Timeline(params.phase());
    Result result = new AcquireRelease(name, target.clients(), target.storeName(), target.cluster(),
            new AcquireRelease.Params(params.clients(), params.window(), params.ttl(), warmup, params.phase()))
        .perSecond(timeline)
        .run();
    return new Phase(name, result, timeline);
  }

  /** One measured phase: its acquire-release result and its seconds. */
  private record Phase(String name, Result result, Timeline timeline) {

    double cyclesPerSecond() {
      return result.value("cycles_per_s");
    }

    /** Adds this phase's figures to {@code r}, prefixed with its name; {@code warm} to compare with. */
    void addTo(Result r, Phase warm) {
      String p = name + "_";
      String l = name + ": ";
      r.figure(p + "cycles_per_s", l + "acquire+release cycles", cyclesPerSecond(), "/s");
      for (String q : List.of("p50", "p99", "max")) {
        r.figure(p + "acquire_" + q + "_ms", l + "acquire latency " + q, result.value("acquire_" + q + "_ms"), "ms");
      }
      long[] cycles = timeline.cyclesPerSecond();
      double[] p99 = timeline.acquireP99PerSecond();
      r.figure(p + "first_second_cycles", l + "cycles in the first second", cycles[0], "/s");
      r.figure(p + "first_second_acquire_p99_ms", l + "acquire p99 in the first second", p99[0], "ms");
      if (warm != null) {
        double bar = WARM_SHARE * warm.cyclesPerSecond();
        int firstWarm = -1;
        for (int i = 0; i < cycles.length; i++) {
          if (cycles[i] >= bar) {
            firstWarm = i + 1;
            break;
          }
        }
        r.figure(p + "first_warm_second", l + "first second at >= " + Math.round(WARM_SHARE * 100)
            + "% of the warm rate", firstWarm < 0 ? Double.NaN : firstWarm, "");
      }
      r.figure(p + "server_cpu_cores", l + "server CPU (all members)", result.value("server_cpu_cores"), "cores");
      r.figure(p + "server_cpu_us_per_cycle", l + "server CPU per cycle", result.value("server_cpu_us_per_op"), "us");
      r.figure(p + "errors", l + "errors", result.value("errors"), "");
      r.note(l + "cycles per second: " + LongStream.of(cycles).mapToObj(Long::toString).collect(Collectors.joining(" ")));
      r.note(l + "acquire p99 per second (ms): " + DoubleStream.of(p99)
          .mapToObj(v -> Double.isNaN(v) ? "n/a" : String.format(Locale.ROOT, "%.1f", v))
          .collect(Collectors.joining(" ")));
      Map<String, Object> d = new LinkedHashMap<>(result.toJson());
      r.detail(name, d);
      result.errors().forEach((k, v) -> r.note(l + v + " x " + k));
    }
  }
}
