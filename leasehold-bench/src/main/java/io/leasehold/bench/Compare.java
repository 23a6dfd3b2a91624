package io.leasehold.bench;

import io.leasehold.cli.Durations;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code compare}: for each store in turn, starts its cluster, runs every workload with the same
 * parameters, and stops it; measures the disk's fsync latency once, first.
 */
final class Compare {

  /**
   * What to run; the same for every store.
   *
   * @param stores the stores, in order
   * @param warmup warm-up of each load workload
   * @param duration measured time of acquire-release and contended
   * @param lowLoad measured time of the one-client, one-in-flight acquire-release run
   * @param clients clients of acquire-release and contended
   * @param window leases in flight per client in acquire-release
   * @param ttl TTL of acquire-release, contended and failover
   * @param leases leases of hold
   * @param holdTtl TTL of hold
   * @param holdDuration measured time of hold
   * @param holdClients backend instances of hold
   * @param holdSetupTimeout how long hold may take to acquire its leases
   * @param rounds failover rounds (leader kills)
   * @param fsyncWrites writes of the fsync probe
   */
  record Params(
      List<String> stores,
      Duration warmup,
      Duration duration,
      Duration lowLoad,
      int clients,
      int window,
      Duration ttl,
      int leases,
      Duration holdTtl,
      Duration holdDuration,
      int holdClients,
      Duration holdSetupTimeout,
      int rounds,
      int fsyncWrites) {

    /** {@return the defaults: about 10-12 minutes for three stores on 2 cores, or about 2 if {@code quick}} */
    static Params defaults(boolean quick) {
      return new Params(
          List.of("core", "etcd", "zookeeper"),
          Duration.ofSeconds(quick ? 1 : 5),
          Duration.ofSeconds(quick ? 4 : 20),
          Duration.ofSeconds(quick ? 3 : 10),
          4,
          quick ? 8 : 16,
          Duration.ofSeconds(10),
          quick ? 10_000 : 100_000,
          Duration.ofSeconds(5),
          Duration.ofSeconds(quick ? 5 : 20),
          4,
          Duration.ofSeconds(quick ? 20 : 90),
          quick ? 1 : 3,
          quick ? 100 : 300);
    }

    Map<String, Object> toJson() {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("stores", stores);
      j.put("warmup", Durations.format(warmup));
      j.put("duration", Durations.format(duration));
      j.put("low_load_duration", Durations.format(lowLoad));
      j.put("clients", clients);
      j.put("window", window);
      j.put("ttl", Durations.format(ttl));
      j.put("hold_leases", leases);
      j.put("hold_ttl", Durations.format(holdTtl));
      j.put("hold_duration", Durations.format(holdDuration));
      j.put("hold_clients", holdClients);
      j.put("hold_setup_timeout", Durations.format(holdSetupTimeout));
      j.put("failover_rounds", rounds);
      j.put("fsync_writes", fsyncWrites);
      return j;
    }
  }

  /**
   * What a compare run measured.
   *
   * @param params what it ran
   * @param fsync the fsync probe
   * @param results each store's results, in run order
   * @param settings each store's durability and timing settings, where the cluster told
   * @param failures why a store's run stopped early, by store
   */
  record Outcome(
      Params params,
      Result fsync,
      Map<String, List<Result>> results,
      Map<String, String> settings,
      Map<String, String> failures) {}

  private final Params params;
  private final Function<String, Target> starter;
  private final PrintWriter progress;

  /**
   * @param starter starts the cluster of a store; the run closes it
   * @param progress where to say what runs now (stderr)
   */
  Compare(Params params, Function<String, Target> starter, PrintWriter progress) {
    this.params = params;
    this.starter = starter;
    this.progress = progress;
  }

  Outcome run() throws InterruptedException {
    say("measuring the disk's fsync latency (" + params.fsyncWrites() + " writes)");
    Result fsync = FsyncProbe.run(params.fsyncWrites());
    Map<String, List<Result>> results = new LinkedHashMap<>();
    Map<String, String> settings = new LinkedHashMap<>();
    Map<String, String> failures = new LinkedHashMap<>();
    for (String store : params.stores()) {
      List<Result> list = new ArrayList<>();
      results.put(store, list);
      say(store + ": starting a 3-member cluster");
      long started = System.nanoTime();
      try (Target t = starter.apply(store)) {
        t.settings().ifPresent(s -> settings.put(store, s));
        runAll(store, t, list);
      } catch (RuntimeException e) {
        failures.put(store, e.toString());
        say(store + ": stopped early: " + e);
      }
      say(store + ": done in " + Math.round((System.nanoTime() - started) / 1e9) + "s");
    }
    return new Outcome(params, fsync, results, settings, failures);
  }

  private void runAll(String store, Target t, List<Result> out) throws InterruptedException {
    say(store + ": low-load (1 client, 1 in flight) for " + Durations.format(params.lowLoad()));
    out.add(new AcquireRelease("low-load", t.clients(), store,
        new AcquireRelease.Params(1, 1, params.ttl(), params.warmup(), params.lowLoad())).run());
    say(store + ": acquire-release for " + Durations.format(params.duration()));
    out.add(new AcquireRelease(t.clients(), store,
        new AcquireRelease.Params(params.clients(), params.window(), params.ttl(), params.warmup(), params.duration())).run());
    say(store + ": contended for " + Durations.format(params.duration()));
    out.add(new Contended(t.clients(), store,
        new Contended.Params(params.clients(), params.ttl(), Duration.ofMillis(1), params.warmup(), params.duration())).run());
    if (t.cluster().isPresent()) {
      say(store + ": failover, " + params.rounds() + " leader kills");
      out.add(new LeaderFailover(t.cluster().get(), t.clients(), FailoverCommand.memberClients(t.cluster().get()),
          new LeaderFailover.Params(params.rounds(), params.ttl(), Duration.ofSeconds(60))).run());
    }
    // Last: its leases are not released one by one (the cluster stops next), and what closing the
    // backends leaves the store to clean up must not slow another workload down.
    say(store + ": hold " + params.leases() + " leases for " + Durations.format(params.holdDuration()));
    out.add(new Hold(t.clients(), store, t.cluster(),
        new Hold.Params(params.holdClients(), params.leases(), params.holdTtl(), null, 64, params.holdSetupTimeout(), params.warmup(), params.holdDuration(), false)).run());
  }

  private void say(String line) {
    progress.println("leasehold bench compare: " + line);
    progress.flush();
  }
}
