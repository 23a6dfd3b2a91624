package io.leasehold.bench;

import io.leasehold.bench.cluster.Jvm;
import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.cli.Durations;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiFunction;

/**
 * {@code compare}: {@code rounds} times, each store in turn (the order rotated by one each round,
 * so that every store runs first, second and third equally often) starts its cluster in the same
 * data directory, is warmed up by the same load for the same time, runs every workload with the
 * same parameters, and stops. The disk's fsync latency is measured once, first, in that directory.
 */
final class Compare {

  /**
   * What to run; the same for every store and every round.
   *
   * @param stores the stores, in the first round's order
   * @param rounds how many times every store runs
   * @param warmup how long each store is warmed up after it started, before anything is measured
   * @param settle each workload's own warm-up, left out of its figures
   * @param duration measured time of acquire-release and contended
   * @param lowLoad measured time of the one-client, one-in-flight acquire-release run
   * @param clients clients of acquire-release, contended and the warm-up
   * @param window leases in flight per client in acquire-release and the warm-up
   * @param ttl TTL of acquire-release, contended and failover
   * @param leases leases of hold
   * @param holdTtl TTL of hold
   * @param holdDuration measured time of each of hold's two phases (quiet, and under a write flood)
   * @param holdClients backend instances of hold
   * @param holdSetupTimeout how long hold and expire-storm may take to acquire their leases
   * @param kills leader kills of failover, over all rounds together; 0 skips failover
   * @param stormLeases leases of expire-storm; 0 skips it
   * @param stormTtl TTL of expire-storm's leases
   * @param stormHolders processes that hold expire-storm's leases
   * @param fsyncWrites writes of the fsync probe
   * @param dataDir where every cluster keeps its data (a fresh directory under it per run), or null
   *     for a fresh directory under the temporary directory
   */
  record Params(
      List<String> stores,
      int rounds,
      Duration warmup,
      Duration settle,
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
      int kills,
      int stormLeases,
      Duration stormTtl,
      int stormHolders,
      int fsyncWrites,
      Path dataDir) {

    /** {@return the defaults, or those of a smoke run of about 3 minutes if {@code quick}} */
    static Params defaults(boolean quick) {
      return new Params(
          List.of("core", "etcd", "zookeeper"),
          quick ? 1 : 3,
          // JVM stores compile their hot paths for minutes: a core node's C2 compiler thread still
          // took a quarter of a core 35-45 s after start under load, and under 1% after 100 s.
          Duration.ofSeconds(quick ? 4 : 90),
          Duration.ofSeconds(quick ? 1 : 2),
          Duration.ofSeconds(quick ? 3 : 20),
          Duration.ofSeconds(quick ? 2 : 10),
          4,
          quick ? 8 : 16,
          Duration.ofSeconds(10),
          quick ? 10_000 : 100_000,
          Duration.ofSeconds(5),
          Duration.ofSeconds(quick ? 3 : 20),
          4,
          Duration.ofSeconds(quick ? 20 : 120),
          quick ? 1 : 50,
          quick ? 5_000 : 100_000,
          Duration.ofSeconds(5),
          4,
          quick ? 100 : 300,
          null);
    }

    Map<String, Object> toJson() {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("stores", stores);
      j.put("rounds", rounds);
      j.put("warmup", Durations.format(warmup));
      j.put("settle", Durations.format(settle));
      j.put("duration", Durations.format(duration));
      j.put("low_load_duration", Durations.format(lowLoad));
      j.put("clients", clients);
      j.put("window", window);
      j.put("ttl", Durations.format(ttl));
      j.put("hold_leases", leases);
      j.put("hold_ttl", Durations.format(holdTtl));
      j.put("hold_duration", Durations.format(holdDuration));
      j.put("hold_clients", holdClients);
      j.put("setup_timeout", Durations.format(holdSetupTimeout));
      j.put("kills", kills);
      j.put("storm_leases", stormLeases);
      j.put("storm_ttl", Durations.format(stormTtl));
      j.put("storm_holders", stormHolders);
      j.put("fsync_writes", fsyncWrites);
      return j;
    }
  }

  /**
   * One store in one round.
   *
   * @param round from 1
   * @param position the store's place in that round's order, from 1
   * @param store the store
   * @param loadAverage the machine's load average when its cluster started
   * @param results what its workloads measured (the warm-up's first)
   * @param failure what failed (workloads that could not run, or the cluster), or null
   */
  record Run(int round, int position, String store, double loadAverage, List<Result> results, String failure) {

    /** {@return the result of {@code workload}, if it ran} */
    Optional<Result> result(String workload) {
      return results.stream().filter(r -> r.workload().equals(workload)).findFirst();
    }

    Map<String, Object> toJson() {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("round", round);
      j.put("position", position);
      j.put("store", store);
      j.put("load_average", loadAverage);
      j.put("failure", failure);
      j.put("results", results.stream().map(Result::toJson).toList());
      return j;
    }
  }

  /**
   * What a compare run measured.
   *
   * @param params what it ran
   * @param fsync the fsync probe
   * @param runs every store in every round, in the order they ran
   * @param settings each store's durability and timing settings, as its cluster describes them
   * @param environment the machine, the data directory, the JVMs' flags, the load average
   */
  record Outcome(Params params, Result fsync, List<Run> runs, Map<String, String> settings, Map<String, Object> environment) {

    /** {@return the runs of {@code store}} */
    List<Run> runsOf(String store) {
      return runs.stream().filter(r -> r.store().equals(store)).toList();
    }

    /** {@return why runs stopped early, as "store, round N: why"} */
    List<String> failures() {
      return runs.stream().filter(r -> r.failure() != null)
          .map(r -> r.store() + ", round " + r.round() + ": " + r.failure()).toList();
    }
  }

  private final Params params;
  private final BiFunction<String, Path, Target> starter;
  private final PrintWriter progress;

  /**
   * @param starter starts the cluster of a store in a fresh directory under the given one; the run
   *     closes it
   * @param progress where to say what runs now (stderr)
   */
  Compare(Params params, BiFunction<String, Path, Target> starter, PrintWriter progress) {
    this.params = params;
    this.starter = starter;
    this.progress = progress;
  }

  /** {@return the stores' order in round {@code round} (from 0): the first round's, rotated left by {@code round}} */
  static List<String> order(List<String> stores, int round) {
    int n = stores.size();
    List<String> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(stores.get((i + round) % n));
    }
    return out;
  }

  /** {@return the leader kills of round {@code round} (from 0): {@code kills} spread evenly, the earlier rounds taking the remainder} */
  static int killsInRound(int kills, int rounds, int round) {
    return kills / rounds + (round < kills % rounds ? 1 : 0);
  }

  /** {@return the first part of the warm-up, acquire-release: two thirds; contended gets the rest} */
  static Duration acquireReleaseWarmup(Duration warmup) {
    return warmup.multipliedBy(2).dividedBy(3);
  }

  Outcome run() throws InterruptedException {
    Map<String, Object> env = new LinkedHashMap<>();
    env.put("cores", Runtime.getRuntime().availableProcessors());
    env.put("load_average_start", ResourceMeter.loadAverage());
    env.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
    env.put("server_java", Jvm.serverJava());
    env.put("server_jvm_options", Jvm.serverOptions());
    env.put("core_aot_options", Jvm.coreAotOptions());
    env.put("bench_jvm_options", ManagementFactory.getRuntimeMXBean().getInputArguments());
    boolean ownDir = params.dataDir() == null;
    Path dataDir;
    try {
      dataDir = ownDir ? Files.createTempDirectory("leasehold-bench-compare-")
          : Files.createDirectories(params.dataDir().toAbsolutePath().normalize());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make the data directory " + params.dataDir(), e);
    }
    env.put("data_dir", dataDir.toString());
    env.put("filesystem", describe(dataDir));

    say("measuring the disk's fsync latency in " + dataDir + " (" + params.fsyncWrites() + " writes)");
    Result fsync = FsyncProbe.run(params.fsyncWrites(), dataDir);
    List<Run> runs = new ArrayList<>();
    Map<String, String> settings = new LinkedHashMap<>();
    for (int round = 0; round < params.rounds(); round++) {
      List<String> order = order(params.stores(), round);
      say("round " + (round + 1) + " of " + params.rounds() + ": " + String.join(", ", order));
      int kills = killsInRound(params.kills(), params.rounds(), round);
      for (int position = 0; position < order.size(); position++) {
        String store = order.get(position);
        double load = ResourceMeter.loadAverage();
        List<Result> results = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        say(store + ": starting a 3-member cluster (load average " + String.format(Locale.ROOT, "%.1f", load) + ")");
        long started = System.nanoTime();
        try (Target t = starter.apply(store, dataDir)) {
          t.settings().ifPresent(s -> settings.put(store, s));
          runAll(store, t, kills, results, failures);
        } catch (RuntimeException e) {
          failures.add("cluster: " + e);
          say(store + ": stopped early: " + e);
        }
        runs.add(new Run(round + 1, position + 1, store, load, results, failures.isEmpty() ? null : String.join("; ", failures)));
        say(store + ": done in " + Math.round((System.nanoTime() - started) / 1e9) + "s");
      }
    }
    env.put("load_average_end", ResourceMeter.loadAverage());
    if (ownDir) {
      try {
        Files.deleteIfExists(dataDir);
      } catch (IOException e) {
        say("could not delete " + dataDir + ": " + e.getMessage());
      }
    }
    return new Outcome(params, fsync, runs, settings, env);
  }

  private static String describe(Path dir) {
    try {
      FileStore store = Files.getFileStore(dir);
      return store.type() + " on " + store.name();
    } catch (IOException e) {
      return "unknown (" + e.getMessage() + ")";
    }
  }

  /** One workload; it adds its result to the run's. */
  @FunctionalInterface
  private interface Step {
    Result run() throws InterruptedException;
  }

  /**
   * Runs one workload; a failure is noted and the next workload runs anyway (a storm whose holders
   * could not acquire must not cost the store its hold figures).
   */
  private void step(String store, String workload, List<Result> out, List<String> failures, Step step) throws InterruptedException {
    try {
      out.add(step.run());
    } catch (RuntimeException e) {
      failures.add(workload + ": " + e);
      say(store + ": " + workload + " failed: " + e);
    }
  }

  private void runAll(String store, Target t, int kills, List<Result> out, List<String> failures) throws InterruptedException {
    Optional<ManagedCluster> cluster = t.cluster();
    // The same load for the same time on every store before anything counts: the core's and
    // ZooKeeper's JVMs (and this one's client code) compile their hot paths; etcd is native code.
    Duration arWarm = acquireReleaseWarmup(params.warmup());
    Duration contendedWarm = params.warmup().minus(arWarm);
    say(store + ": warm-up, acquire-release for " + Durations.format(arWarm) + ", contended for " + Durations.format(contendedWarm));
    if (!arWarm.isZero()) {
      step(store, "warm-up", out, failures, () -> new AcquireRelease("warm-up", t.clients(), store, cluster,
          new AcquireRelease.Params(params.clients(), params.window(), params.ttl(), Duration.ZERO, arWarm)).run());
    }
    if (!contendedWarm.isZero()) {
      step(store, "warm-up", new ArrayList<>(), failures, () -> new Contended(t.clients(), store,
          new Contended.Params(params.clients(), params.ttl(), Duration.ofMillis(1), Duration.ZERO, contendedWarm)).run());
    }
    say(store + ": low-load (1 client, 1 in flight) for " + Durations.format(params.lowLoad()));
    step(store, "low-load", out, failures, () -> new AcquireRelease("low-load", t.clients(), store, cluster,
        new AcquireRelease.Params(1, 1, params.ttl(), params.settle(), params.lowLoad())).run());
    say(store + ": acquire-release for " + Durations.format(params.duration()));
    step(store, "acquire-release", out, failures, () -> new AcquireRelease("acquire-release", t.clients(), store, cluster,
        new AcquireRelease.Params(params.clients(), params.window(), params.ttl(), params.settle(), params.duration())).run());
    say(store + ": contended for " + Durations.format(params.duration()));
    step(store, "contended", out, failures, () -> new Contended(t.clients(), store, cluster,
        new Contended.Params(params.clients(), params.ttl(), Duration.ofMillis(1), params.settle(), params.duration())).run());
    if (cluster.isPresent() && kills > 0) {
      say(store + ": failover, leader kills: " + kills);
      step(store, "failover", out, failures, () -> new LeaderFailover(cluster.get(), t.clients(),
          FailoverCommand.memberClients(cluster.get()), new LeaderFailover.Params(kills, params.ttl(), Duration.ofSeconds(60))).run());
    }
    if (cluster.isPresent() && params.stormLeases() > 0) {
      say(store + ": expire-storm, " + params.stormLeases() + " leases on " + params.stormHolders() + " holder processes, TTL "
          + Durations.format(params.stormTtl()));
      step(store, "expire-storm", out, failures, () -> new ExpireStorm(cluster.get(), t.clients(), store,
          new ExpireStorm.Params(params.stormLeases(), params.stormHolders(), params.stormTtl(), 64, params.holdSetupTimeout(),
              Duration.ofMillis(20), Duration.ofSeconds(2), Duration.ofSeconds(60))).run());
    }
    // Last: its leases are not released one by one (the cluster stops next), and what closing the
    // backends leaves the store to clean up must not slow another workload down.
    say(store + ": hold " + params.leases() + " leases, " + Durations.format(params.holdDuration()) + " quiet and "
        + Durations.format(params.holdDuration()) + " under a write flood");
    step(store, "hold", out, failures, () -> new Hold(t.clients(), store, cluster,
        new Hold.Params(params.holdClients(), params.leases(), params.holdTtl(), null, 64, params.holdSetupTimeout(),
            params.settle(), params.holdDuration(), false, Hold.Flood.DEFAULT)).run());
  }

  private void say(String line) {
    progress.println("leasehold bench compare: " + line);
    progress.flush();
  }
}
