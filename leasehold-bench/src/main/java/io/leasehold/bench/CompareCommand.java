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
      "Side by side: for each store (core, etcd, zookeeper) starts a 3-member cluster on loopback,"
          + " runs low-load, acquire-release, contended, hold and failover (leader kills) with the"
          + " same parameters, and stops it; first measures the disk's fsync latency. Prints one"
          + " table with each figure per store and its ratio to etcd, and the core's targets, met"
          + " or missed by how much. About 10-12 minutes with the defaults on 2 cores; --quick"
          + " takes about 2-3.",
      ""
    },
    sortOptions = false)
final class CompareCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(names = "--quick", description = "A smoke run of about 2-3 minutes: shorter runs, 10,000 held leases, 1 failover round.")
  boolean quick;

  @Option(names = "--stores", paramLabel = "LIST", split = ",", defaultValue = "core,etcd,zookeeper",
      description = "The stores to run, in order (default: ${DEFAULT-VALUE}; any of core, etcd, zookeeper).")
  List<TargetOptions.Kind> stores;

  @Option(names = "--duration", paramLabel = "D", description = "Measured time of acquire-release and contended (default: 20s, --quick 4s; 1s to 1h).")
  Duration duration;

  @Option(names = "--warmup", paramLabel = "D", description = "Warm-up before each measurement (default: 5s, --quick 1s; 0s to 10m).")
  Duration warmup;

  @Option(names = "--clients", paramLabel = "N", description = "Clients of acquire-release and contended (default: 4; 2 to 256).")
  Integer clients;

  @Option(names = "--ttl", paramLabel = "D", description = "TTL of acquire-release, contended and failover (default: 10s; 1s to 1h).")
  Duration ttl;

  @Option(names = "--leases", paramLabel = "M", description = "Leases held by hold (default: 100,000, --quick 10,000; 1 to 1,000,000).")
  Integer leases;

  @Option(names = "--hold-ttl", paramLabel = "D", description = "TTL of hold's leases; they renew every TTL / 3 (default: 5s; 1s to 1h).")
  Duration holdTtl;

  @Option(names = "--hold-duration", paramLabel = "D", description = "Measured time of hold (default: 20s, --quick 5s; 1s to 1h).")
  Duration holdDuration;

  @Option(names = "--rounds", paramLabel = "K", description = "Leader kills of failover (default: 3, --quick 1; 1 to 100).")
  Integer rounds;

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
        or(warmup, d.warmup()),
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
        or(rounds, d.rounds()),
        d.fsyncWrites());
    Check.range(spec, "--duration", p.duration(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--warmup", p.warmup(), Duration.ZERO, Duration.ofMinutes(10));
    Check.range(spec, "--clients", p.clients(), 2, 256);
    Check.range(spec, "--ttl", p.ttl(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--leases", p.leases(), 1, 1_000_000);
    Check.range(spec, "--hold-ttl", p.holdTtl(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--hold-duration", p.holdDuration(), Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--rounds", p.rounds(), 1, 100);
    return p;
  }

  private static <T> T or(T value, T otherwise) {
    return value != null ? value : otherwise;
  }
}
