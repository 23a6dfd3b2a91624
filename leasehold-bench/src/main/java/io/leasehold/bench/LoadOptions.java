package io.leasehold.bench;

import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * The time options every load workload shares; their defaults come from each
 * command's {@link CommandDefaults}.
 */
final class LoadOptions {

  @Option(names = "--duration", paramLabel = "D", description = "Time measured, after the warm-up (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration duration;

  @Option(names = "--warmup", paramLabel = "D", description = "Time run before measuring; left out of every figure (default: ${DEFAULT-VALUE}; 0s to 10m).")
  Duration warmup;

  @Option(names = "--ttl", paramLabel = "D", description = "The leases' time to live (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration ttl;

  void validate(CommandSpec spec) {
    Check.range(spec, "--duration", duration, Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--warmup", warmup, Duration.ZERO, Duration.ofMinutes(10));
    Check.range(spec, "--ttl", ttl, Duration.ofSeconds(1), Duration.ofHours(1));
  }
}
