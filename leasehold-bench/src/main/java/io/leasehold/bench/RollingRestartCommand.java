package io.leasehold.bench;

import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code leasehold bench rolling-restart}. */
@Command(
    name = "rolling-restart",
    mixinStandardHelpOptions = true,
    description = {
      "A rolling restart of a 3-node core under load: --leases leases are held through --clients backends"
          + " (renewed by the normal holder engine) while a trickle of acquires from another client measures"
          + " write stalls; then each node in turn is stopped with SIGTERM (a leader hands over first), started"
          + " again on its data and waited for until it serves and has caught up, before the next. Reports"
          + " losses (onLost; must be 0), the worst write stall, and each node's restart time. Needs --start core.",
      ""
    },
    sortOptions = false)
final class RollingRestartCommand extends BenchCommand {

  @Option(names = "--leases", paramLabel = "M", defaultValue = "10000", description = "Leases held through the roll (default: ${DEFAULT-VALUE}; 1 to 1,000,000).")
  int leases;

  @Option(names = "--clients", paramLabel = "N", defaultValue = "4", description = "Backend instances the leases are spread over, one session each (default: ${DEFAULT-VALUE}; 1 to 64).")
  int clients;

  @Option(names = "--ttl", paramLabel = "D", defaultValue = "10s", description = "The leases' TTL; they renew every TTL / 3 (default: ${DEFAULT-VALUE}; 1s to 10m).")
  Duration ttl;

  @Option(names = "--window", paramLabel = "N", defaultValue = "64", description = "Acquires in flight per client during the setup (default: ${DEFAULT-VALUE}; 1 to 10,000).")
  int window;

  @Option(names = "--setup-timeout", paramLabel = "D", defaultValue = "5m", description = "After this long the setup starts no more acquires (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration setupTimeout;

  @Option(names = "--settle", paramLabel = "D", defaultValue = "5s", description = "How long the leases are held before the first restart and after each (default: ${DEFAULT-VALUE}; 0s to 10m).")
  Duration settle;

  @Option(names = "--trickle-interval", paramLabel = "D", defaultValue = "20ms", description = "The trickle starts an acquire this often, answered or not (default: ${DEFAULT-VALUE}; 1ms to 1s).")
  Duration trickleInterval;

  @Option(names = "--catch-up-timeout", paramLabel = "D", defaultValue = "60s", description = "How long a restarted node may take to apply what the leader had applied when it came back (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration catchUpTimeout;

  @Override
  void validate() {
    Check.range(spec, "--leases", leases, 1, 1_000_000);
    Check.range(spec, "--clients", clients, 1, 64);
    Check.range(spec, "--ttl", ttl, Duration.ofSeconds(1), Duration.ofMinutes(10));
    Check.range(spec, "--window", window, 1, 10_000);
    Check.range(spec, "--setup-timeout", setupTimeout, Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--settle", settle, Duration.ZERO, Duration.ofMinutes(10));
    Check.range(spec, "--trickle-interval", trickleInterval, Duration.ofMillis(1), Duration.ofSeconds(1));
    Check.range(spec, "--catch-up-timeout", catchUpTimeout, Duration.ofSeconds(1), Duration.ofHours(1));
    if (!target.starts() || target.choice.start != TargetOptions.Kind.core) {
      throw Check.bad(spec, "rolling-restart needs --start core: it stops and restarts the nodes of a core"
          + " cluster the bench runs itself");
    }
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new RollingRestart(t.cluster().orElseThrow(), t.clients(),
        new RollingRestart.Params(clients, leases, ttl, window, setupTimeout, settle, ttl, trickleInterval, catchUpTimeout)).run();
  }
}
