package io.leasehold.bench;

import io.leasehold.bench.cluster.ManagedCluster;
import java.time.Duration;
import java.util.function.IntFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code leasehold bench failover}. */
@Command(
    name = "failover",
    mixinStandardHelpOptions = true,
    description = {
      "Kills things and measures recovery, --rounds times.",
      "--kill leader (needs --start): one client holds lease A while a probe acquires and releases"
          + " fresh leases; the store's leader is killed with SIGKILL. Measures the time from the kill"
          + " to the probe's next successful acquire, and whether A was held through (a renewal sent"
          + " after the kill succeeded, no onLost) or lost, and the time until A was usable again."
          + " The member is restarted and must serve again before the next round.",
      "--kill holder: a holder in a JVM of its own is killed with SIGKILL; measures the time until"
          + " another client acquires the lease (about the TTL).",
      ""
    },
    sortOptions = false)
final class FailoverCommand extends BenchCommand {

  /** What to kill. */
  enum Kill {
    leader,
    holder
  }

  @Option(names = "--kill", paramLabel = "WHAT", defaultValue = "leader", description = "What to kill: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
  Kill kill;

  @Option(names = "--rounds", paramLabel = "K", defaultValue = "5", description = "How many kills (default: ${DEFAULT-VALUE}; 1 to 100).")
  int rounds;

  @Option(names = "--ttl", paramLabel = "D", defaultValue = "10s", description = "The leases' time to live (default: ${DEFAULT-VALUE}; 1s to 1h).")
  Duration ttl;

  @Option(names = "--recovery-timeout", paramLabel = "D", defaultValue = "60s", description = "How long a round waits for each recovery before it counts as failed (default: ${DEFAULT-VALUE}; 1s to 10m).")
  Duration recoveryTimeout;

  @Override
  void validate() {
    Check.range(spec, "--rounds", rounds, 1, 100);
    Check.range(spec, "--ttl", ttl, Duration.ofSeconds(1), Duration.ofHours(1));
    Check.range(spec, "--recovery-timeout", recoveryTimeout, Duration.ofSeconds(1), Duration.ofMinutes(10));
    if (kill == Kill.leader && !target.starts()) {
      throw Check.bad(spec, "failover --kill leader needs --start core|etcd|zookeeper: it kills the store's"
          + " leader, so the bench must run the store itself (--kill holder works with --backend)");
    }
    if (kill == Kill.holder && target.backend() != null && ClientFactory.inProcess(target.backend())) {
      throw Check.bad(spec, "failover --kill holder cannot use --backend " + target.backend()
          + ": that store lives in one JVM, and the holder runs in another");
    }
  }

  @Override
  Result measure(Target t) throws InterruptedException {
    if (kill == Kill.holder) {
      return new HolderFailover(t.uri(), t.storeName(), t.clients(),
          new HolderFailover.Params(rounds, ttl, recoveryTimeout)).run();
    }
    ManagedCluster cluster = t.cluster().orElseThrow();
    return new LeaderFailover(cluster, t.clients(), memberClients(cluster),
        new LeaderFailover.Params(rounds, ttl, recoveryTimeout)).run();
  }

  /** {@return clients that reach member i alone: the cluster's scheme with that member's endpoint} */
  static IntFunction<ClientFactory> memberClients(ManagedCluster cluster) {
    String uri = cluster.backendUri();
    int sep = uri.indexOf("://");
    String scheme = sep > 0 ? uri.substring(0, sep + 3) : uri;
    return i -> ClientFactory.forUri(scheme + cluster.members().get(i).endpoint());
  }
}
