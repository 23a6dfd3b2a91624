package io.leasehold.bench;

import io.leasehold.cli.Durations;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold bench hold}. */
@Command(
    name = "hold",
    mixinStandardHelpOptions = true,
    defaultValueProvider = HoldCommand.Defaults.class,
    description = {
      "Acquires --leases leases spread over --clients backend instances, holds them for the warm-up"
          + " and --duration, then releases them (with --backend; with --start the cluster is stopped). Measures the setup time, renewals per second"
          + " reached (each move of a lease's safe deadline, seen by sampling remaining()), spurious"
          + " losses (onLost; must be 0), this JVM's CPU and, with --start, the servers' CPU and"
          + " resident memory per lease.",
      ""
    },
    sortOptions = false)
final class HoldCommand extends BenchCommand {

  static final class Defaults extends CommandDefaults {
    Defaults() {
      super(Map.of("--duration", "30s", "--warmup", "5s", "--ttl", "10s", "--clients", "4", "--leases", "100000", "--window", "64", "--setup-timeout", "5m"));
    }
  }

  @Mixin LoadOptions load;

  @Option(names = "--clients", paramLabel = "N", description = "Backend instances the leases are spread over, round robin; each has one session keep-alive per TTL (default: ${DEFAULT-VALUE}; 1 to 64).")
  int clients;

  @Option(names = "--leases", paramLabel = "M", description = "Leases to hold (default: ${DEFAULT-VALUE}; 1 to 1,000,000).")
  int leases;

  @Option(names = "--heartbeat", paramLabel = "D", description = "How often each lease renews (default: the library's, TTL / 3; above 0 and below the lease's safe window, TTL x 0.89 with the other defaults).")
  Duration heartbeat;

  @Option(names = "--window", paramLabel = "N", description = "Acquires (and releases) in flight per client during setup and teardown (default: ${DEFAULT-VALUE}; 1 to 10,000).")
  int window;

  @Option(names = "--setup-timeout", paramLabel = "D", description = "After this long the setup starts no more acquires, and the run goes on with the leases held (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration setupTimeout;

  @Option(names = "--flood", description = "After the measurement, measure the same leases again for --warmup and --duration while"
      + " 4 other clients flood the store with acquire/release cycles (32 in flight each, TTL 10s) as fast as it answers"
      + " them; figures of that phase start with 'flood:'.")
  boolean flood;

  @Override
  void validate() {
    load.validate(spec);
    Check.range(spec, "--clients", clients, 1, 64);
    Check.range(spec, "--leases", leases, 1, 1_000_000);
    Check.range(spec, "--window", window, 1, 10_000);
    Check.range(spec, "--setup-timeout", setupTimeout, Duration.ofSeconds(1), Duration.ofHours(1));
    checkHeartbeat(spec, "--heartbeat", load.ttl, heartbeat);
  }

  /** The heartbeat must fit the lease settings the TTL gives; LeaseSettings says why not. */
  static void checkHeartbeat(picocli.CommandLine.Model.CommandSpec spec, String option, Duration ttl, Duration heartbeat) {
    if (heartbeat == null) {
      return;
    }
    try {
      LeaseSettings.builder("x", "x").ttl(ttl).heartbeatInterval(heartbeat).build();
    } catch (IllegalArgumentException e) {
      throw Check.bad(spec, option + " " + Durations.format(heartbeat) + " does not fit --ttl "
          + Durations.format(ttl) + ": " + e.getMessage());
    }
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new Hold(t.clients(), t.storeName(), t.cluster(),
        new Hold.Params(clients, leases, load.ttl, heartbeat, window, setupTimeout, load.warmup, load.duration, t.cluster().isEmpty(),
            flood ? Hold.Flood.DEFAULT : null)).run();
  }
}
