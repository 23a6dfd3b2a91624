package io.leasehold.bench;

import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code leasehold bench expire-storm}. */
@Command(
    name = "expire-storm",
    mixinStandardHelpOptions = true,
    description = {
      "Many leases expire at once: --holders processes of their own acquire --leases leases between"
          + " them and are killed with SIGKILL together (no release; their keep-alives stop). Measures,"
          + " from the store's own count of held leases, the time from the kill until the first and"
          + " until the last is gone, and meanwhile the latency of a steady trickle of acquires from"
          + " another client (the stall). Needs --start: the store's count is read from its members.",
      ""
    },
    sortOptions = false)
final class ExpireStormCommand extends BenchCommand {

  @Option(names = "--leases", paramLabel = "M", defaultValue = "100000", description = "Leases that expire together (default: ${DEFAULT-VALUE}; 201 x --holders to 1,000,000).")
  int leases;

  @Option(names = "--holders", paramLabel = "K", defaultValue = "4", description = "Holder processes, one session each; the leases are split between them (default: ${DEFAULT-VALUE}; 1 to 16).")
  int holders;

  @Option(names = "--ttl", paramLabel = "D", defaultValue = "5s", description = "The leases' TTL; on ZooKeeper also the holders' session timeout (default: ${DEFAULT-VALUE}; 1s to 10m).")
  Duration ttl;

  @Option(names = "--window", paramLabel = "N", defaultValue = "64", description = "Acquires in flight per holder during the setup (default: ${DEFAULT-VALUE}; 1 to 10,000).")
  int window;

  @Option(names = "--setup-timeout", paramLabel = "D", defaultValue = "5m", description = "After this long the holders start no more acquires and the storm goes on with what they hold (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration setupTimeout;

  @Option(names = "--trickle-interval", paramLabel = "D", defaultValue = "20ms", description = "The trickle starts an acquire this often, answered or not (default: ${DEFAULT-VALUE}; 1ms to 1s).")
  Duration trickleInterval;

  @Option(names = "--drain-timeout", paramLabel = "D", defaultValue = "60s", description = "How long after kill + TTL to wait for every lease to be gone (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration drainTimeout;

  @Override
  void validate() {
    Check.range(spec, "--leases", leases, 1, 1_000_000);
    Check.range(spec, "--holders", holders, 1, 16);
    Check.range(spec, "--ttl", ttl, Duration.ofSeconds(1), Duration.ofMinutes(10));
    Check.range(spec, "--window", window, 1, 10_000);
    Check.range(spec, "--setup-timeout", setupTimeout, Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--trickle-interval", trickleInterval, Duration.ofMillis(1), Duration.ofSeconds(1));
    Check.range(spec, "--drain-timeout", drainTimeout, Duration.ofSeconds(1), Duration.ofHours(1));
    if (!target.starts()) {
      throw Check.bad(spec, "expire-storm needs --start core|etcd|zookeeper: it reads the store's own count of"
          + " held leases from the members the bench started");
    }
    if (leases < ExpireStorm.MIN_LEASES_PER_HOLDER * holders) {
      throw Check.bad(spec, String.format("--leases must be at least %d x --holders (%,d with %d holders): a holder's"
          + " leases expire together, and the store's count must tell them from the trickle's own; was %,d",
          ExpireStorm.MIN_LEASES_PER_HOLDER, ExpireStorm.MIN_LEASES_PER_HOLDER * holders, holders, leases));
    }
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new ExpireStorm(t.cluster().orElseThrow(), t.clients(), t.storeName(),
        new ExpireStorm.Params(leases, holders, ttl, window, setupTimeout, trickleInterval, Duration.ofSeconds(2), drainTimeout)).run();
  }
}
