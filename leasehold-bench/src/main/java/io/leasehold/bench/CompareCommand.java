package io.leasehold.bench;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code leasehold bench compare}. */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    description = {
      "Side by side: --rounds times, each store (core, etcd, zookeeper; the order rotated by one each"
          + " round) starts a 3-member cluster on loopback with its data in one directory (one disk) at"
          + " its own default durability (fsync on), is warmed up by the same load for the same time,"
          + " runs low-load, acquire-release, contended, failover (leader kills), expire-storm and hold"
          + " (quiet, then under a write flood) with the same parameters, and stops. First measures the"
          + " disk's fsync latency there. Prints one table: each figure's median over the rounds with"
          + " its range, the core's ratios to etcd and to ZooKeeper, and the core's targets, met or"
          + " missed by how much. See docs/bench.md for how long the defaults take; --quick takes about 3 minutes.",
      ""
    },
    sortOptions = false)
final class CompareCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--quick", description = "A smoke run of about 3 minutes: 1 round, short phases, 10,000 held leases,"
      + " 5,000 expiring, 1 leader kill per store. Its figures are too few for the targets that name 100,000 leases or 50 kills (n/a).")
  boolean quick;

  @Option(names = "--stores", paramLabel = "LIST", split = ",", defaultValue = "core,etcd,zookeeper",
      description = "The stores to run, in the first round's order (default: ${DEFAULT-VALUE}; any of core, etcd, zookeeper).")
  List<TargetOptions.Kind> stores;

  @Option(names = "--rounds", paramLabel = "N", description = "How many times every store runs, each round with the order rotated by one (default: 3, --quick 1; 1 to 20).")
  Integer rounds;

  @Option(names = "--warmup", paramLabel = "D", description = "Each store's warm-up after its cluster started, before anything is measured:"
      + " acquire-release for two thirds, contended for the rest (default: 90s, --quick 4s; 0s to 10m).")
  Duration warmup;

  @Option(names = "--settle", paramLabel = "D", description = "Each workload's own run-in before it measures (default: 2s, --quick 1s; 0s to 1m).")
  Duration settle;

  @Option(names = "--duration", paramLabel = "D", description = "Measured time of acquire-release and contended (default: 20s, --quick 3s; 1s to 1h).")
  Duration duration;

  @Option(names = "--clients", paramLabel = "N", description = "Clients of acquire-release, contended and the warm-up (default: 4; 2 to 256).")
  Integer clients;

  @Option(names = "--ttl", paramLabel = "D", description = "TTL of acquire-release, contended and failover (default: 10s; 1s to 1h).")
  Duration ttl;

  @Option(names = "--leases", paramLabel = "M", description = "Leases held by hold (default: 100,000, --quick 10,000; 1 to 1,000,000).")
  Integer leases;

  @Option(names = "--hold-ttl", paramLabel = "D", description = "TTL of hold's leases; they renew every TTL / 3 (default: 5s; 1s to 1h).")
  Duration holdTtl;

  @Option(names = "--hold-duration", paramLabel = "D", description = "Measured time of each of hold's two phases, quiet and under the write flood (default: 20s, --quick 3s; 1s to 1h).")
  Duration holdDuration;

  @Option(names = "--kills", paramLabel = "N", description = "Leader kills of failover per store, spread over the rounds (default: 50, --quick 1; 0 to 1,000; 0 skips failover).")
  Integer kills;

  @Option(names = "--storm-leases", paramLabel = "M", description = "Leases of expire-storm, held by 4 processes that are killed together (default: 100,000, --quick 5,000; 0, or 804 to 1,000,000; 0 skips it).")
  Integer stormLeases;

  @Option(names = "--storm-ttl", paramLabel = "D", description = "TTL of expire-storm's leases; on ZooKeeper also its holders' session timeout (default: 5s; 1s to 10m).")
  Duration stormTtl;

  @Option(names = "--data-dir", paramLabel = "DIR", description = "Where every store keeps its data, a fresh directory under DIR per run, and where fsync is measured (default: a fresh directory under the temporary directory).")
  Path dataDir;

  @Option(names = "--json", paramLabel = "FILE", description = "Write everything as JSON to FILE (default: target/bench/compare-<time>.json under the current directory; the path is printed).")
  Path json;

  @Override
  public Integer call() throws InterruptedException {
    Compare.Params params = params();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Compare.Outcome outcome = new Compare(params, Target::start, err).run();
    ComparisonTable table = new ComparisonTable(outcome);
    out.print(table.render());
    Path file = JsonFile.resolve(json, "compare");
    JsonFile.write(file, table.toJson());
    out.println("JSON: " + file);
    out.flush();
    return outcome.failures().isEmpty() ? 0 : 1;
  }

  Compare.Params params() {
    Compare.Params d = Compare.Params.defaults(quick);
    Compare.Params p = new Compare.Params(
        stores.stream().map(Enum::name).distinct().toList(),
        or(rounds, d.rounds()),
        or(warmup, d.warmup()),
        or(settle, d.settle()),
        or(duration, d.duration()),
        d.lowLoad(),
        or(clients, d.clients()),
        d.window(),
        or(ttl, d.ttl()),
        or(leases, d.leases()),
        or(holdTtl, d.holdTtl()),
        or(holdDuration, d.holdDuration()),
        d.holdClients(),
        d.holdSetupTimeout(),
        or(kills, d.kills()),
        or(stormLeases, d.stormLeases()),
        or(stormTtl, d.stormTtl()),
        d.stormHolders(),
        d.fsyncWrites(),
        dataDir);
    Check.range(spec, "--rounds", p.rounds(), 1, 20);
    Check.range(spec, "--warmup", p.warmup(), Duration.ZERO, Duration.ofMinutes(10));
    Check.range(spec, "--settle", p.settle(), Duration.ZERO, Duration.ofMinutes(1));
    Check.range(spec, "--duration", p.duration(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--clients", p.clients(), 2, 256);
    Check.range(spec, "--ttl", p.ttl(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--leases", p.leases(), 1, 1_000_000);
    Check.range(spec, "--hold-ttl", p.holdTtl(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--hold-duration", p.holdDuration(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--kills", p.kills(), 0, 1_000);
    Check.range(spec, "--storm-leases", p.stormLeases(), 0, 1_000_000);
    Check.range(spec, "--storm-ttl", p.stormTtl(), Duration.ofSeconds(1), Duration.ofMinutes(10));
    int stormMin = ExpireStorm.MIN_LEASES_PER_HOLDER * p.stormHolders();
    if (p.stormLeases() > 0 && p.stormLeases() < stormMin) {
      throw Check.bad(spec, String.format("--storm-leases must be 0 or at least %,d (%d per holder process, so that a"
          + " holder's expiry can be told from the trickle's own leases); was %,d", stormMin, ExpireStorm.MIN_LEASES_PER_HOLDER, p.stormLeases()));
    }
    return p;
  }

  private static <T> T or(T value, T otherwise) {
    return value != null ? value : otherwise;
  }
}
