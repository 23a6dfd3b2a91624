package io.leasehold.bench;

import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code leasehold bench waiters}. */
@Command(
    name = "waiters",
    mixinStandardHelpOptions = true,
    defaultValueProvider = WaitersCommand.Defaults.class,
    description = {
      "N processes wait for one lease with LeaderElection, as applications (and `leasehold run"
          + " --wait`) do; each leader holds it for --hold, then releases. Measures how soon after"
          + " a leader's work returns the next leader's work starts, with the waiters observing the"
          + " lease (--mode observe: told when it frees) or polling it with backoff (--mode poll).",
      ""
    },
    sortOptions = false)
final class WaitersCommand extends BenchCommand {

  static final class Defaults extends CommandDefaults {
    Defaults() {
      super(Map.of("--duration", "30s", "--warmup", "10s", "--ttl", "10s", "--waiters", "3", "--hold", "100ms",
          "--mode", "observe"));
    }
  }

  /** How the waiters wait. */
  enum Mode {
    observe,
    poll
  }

  @Mixin LoadOptions load;

  @Option(names = "--waiters", paramLabel = "N", description = "Waiting processes: separate backend instances (default: ${DEFAULT-VALUE}; 2 to 64).")
  int waiters;

  @Option(names = "--hold", paramLabel = "D", description = "How long each leader keeps the lease (default: ${DEFAULT-VALUE}; 0ms to 10s).")
  Duration hold;

  @Option(names = "--mode", paramLabel = "MODE", description = "observe: the waiters observe the lease and ask again when it frees; poll: they ask again after the election's backoff (default: ${DEFAULT-VALUE}).")
  Mode mode;

  @Override
  void validate() {
    load.validate(spec);
    Check.range(spec, "--waiters", waiters, 2, 64);
    Check.range(spec, "--hold", hold, Duration.ZERO, Duration.ofSeconds(10));
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    return new Waiters(t.clients(), t.storeName(), t.cluster(),
        new Waiters.Params(waiters, load.ttl, hold, mode == Mode.observe, load.warmup, load.duration)).run();
  }
}
