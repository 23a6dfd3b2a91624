package io.leasehold.bench;

import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold bench contended}. */
@Command(
    name = "contended",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ContendedCommand.Defaults.class,
    description = {
      "N clients on one lease. A refused client asks again at once (one attempt per acquire); the"
          + " holder keeps the lease for --hold, releases it and waits until another client took it,"
          + " so every tenure is a handover. Measures handovers per second and the gap from the"
          + " holder's release() call to the next holder's acquire() completing true.",
      ""
    },
    sortOptions = false)
final class ContendedCommand extends BenchCommand {

  static final class Defaults extends CommandDefaults {
    Defaults() {
      super(Map.of("--duration", "20s", "--warmup", "5s", "--ttl", "10s", "--clients", "4", "--hold", "1ms"));
    }
  }

  @Mixin LoadOptions load;

  @Option(names = "--clients", paramLabel = "N", description = "Contending clients: separate backend instances, so separate holders (default: ${DEFAULT-VALUE}; 2 to 64).")
  int clients;

  @Option(names = "--hold", paramLabel = "D", description = "How long each holder keeps the lease before releasing it (default: ${DEFAULT-VALUE}; 0ms to 10s).")
  Duration hold;

  @Override
  void validate() {
    load.validate(spec);
    Check.range(spec, "--clients", clients, 2, 64);
    Check.range(spec, "--hold", hold, Duration.ZERO, Duration.ofSeconds(10));
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new Contended(t.clients(), t.storeName(), t.cluster(),
        new Contended.Params(clients, load.ttl, hold, load.warmup, load.duration)).run();
  }
}
