package io.leasehold.bench;

import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code leasehold bench cold-start}. */
@Command(
    name = "cold-start",
    mixinStandardHelpOptions = true,
    description = {
      "What a freshly started cluster does in its first seconds: acquire-release from the moment it serves,"
          + " with no warm-up, second by second (cycles and acquire p99 per second); then the same after"
          + " --warm more of that load; then (unless --no-restart) every member in turn killed and started"
          + " again, and the same once more from the first second. Needs --start.",
      ""
    },
    sortOptions = false)
final class ColdStartCommand extends BenchCommand {

  @Option(names = "--clients", paramLabel = "N", defaultValue = "4", description = "Clients: separate backend instances (default: ${DEFAULT-VALUE}; 1 to 256).")
  int clients;

  @Option(names = "--window", paramLabel = "N", defaultValue = "16", description = "Leases per client, one operation in flight each (default: ${DEFAULT-VALUE}; 1 to 1024).")
  int window;

  @Option(names = "--ttl", paramLabel = "D", defaultValue = "10s", description = "The leases' time to live (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration ttl;

  @Option(names = "--phase", paramLabel = "D", defaultValue = "10s", description = "Length of each measured phase: cold, warm, restarted (default: ${DEFAULT-VALUE}; 1s to 10m).")
  Duration phase;

  @Option(names = "--warm", paramLabel = "D", defaultValue = "90s", description = "Load run after the cold phase before the warm one is measured (default: ${DEFAULT-VALUE}; 0s to 1h).")
  Duration warm;

  @Option(names = "--no-restart",
      description = "Leave out the restarted phase (by default every member is killed and started again, then measured from its first second).")
  boolean noRestart;

  @Override
  void validate() {
    Check.range(spec, "--clients", clients, 1, 256);
    Check.range(spec, "--window", window, 1, 1024);
    Check.range(spec, "--ttl", ttl, Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--phase", phase, Duration.ofSeconds(1), Duration.ofMinutes(10));
    Check.range(spec, "--warm", warm, Duration.ZERO, Duration.ofHours(1));
    if (!target.starts()) {
      throw Check.bad(spec, "cold-start needs --start: it measures a cluster from the moment the bench started it,"
          + " not " + target.backend() + ", which runs already");
    }
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new ColdStart(t, new ColdStart.Params(clients, window, ttl, phase, warm, !noRestart)).run();
  }
}
