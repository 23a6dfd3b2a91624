package io.leasehold.bench;

import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold bench acquire-release}. */
@Command(
    name = "acquire-release",
    mixinStandardHelpOptions = true,
    defaultValueProvider = AcquireReleaseCommand.Defaults.class,
    description = {
      "N clients, each cycling its own distinct leases through acquire and release with a bounded"
          + " window of operations in flight. Measures cycles per second, the latency of acquire and"
          + " of release (p50, p95, p99, p99.9, max) and errors by kind.",
      ""
    },
    sortOptions = false)
final class AcquireReleaseCommand extends BenchCommand {

  static final class Defaults extends CommandDefaults {
    Defaults() {
      super(Map.of("--duration", "20s", "--warmup", "5s", "--ttl", "10s", "--clients", "4", "--window", "16"));
    }
  }

  @Mixin LoadOptions load;

  @Option(names = "--clients", paramLabel = "N", description = "Clients: separate backend instances, as separate processes would have (default: ${DEFAULT-VALUE}; 1 to 256).")
  int clients;

  @Option(names = "--window", paramLabel = "N", description = "Leases per client, each with one operation in flight: the window of concurrent operations per client (default: ${DEFAULT-VALUE}; 1 to 1024).")
  int window;

  @Override
  void validate() {
    load.validate(spec);
    Check.range(spec, "--clients", clients, 1, 256);
    Check.range(spec, "--window", window, 1, 1024);
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new AcquireRelease("acquire-release", t.clients(), t.storeName(), t.cluster(),
        new AcquireRelease.Params(clients, window, load.ttl, load.warmup, load.duration)).run();
  }
}
