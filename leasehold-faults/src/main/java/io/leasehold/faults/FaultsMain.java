package io.leasehold.faults;

import io.leasehold.cli.Durations;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold faults}: runs the fault harness and its checker. */
@Command(
    name = "leasehold faults",
    mixinStandardHelpOptions = true,
    header = "Runs a 3-node core and contending lease clients under injected faults, then checks their histories.",
    description = {
      "Starts 3 core nodes and --clients lease clients as separate JVMs on loopback, every byte between them"
          + " through proxies, and injects one fault at a time on a schedule drawn from --seed: kill -9 of a node"
          + " (the leader about half the time) and restart, SIGSTOP of a node or of the lease holder, and"
          + " partitions of a node (both ways) or of a client. Then it heals everything, stops the clients and"
          + " checks: no overlapping tenures, fencing tokens only grow, no fenced write accepted from a stale"
          + " holder, no acknowledged write lost; and reports how long the lease had no holder after each fault.",
      "Histories, node logs, report.txt and report.json stay in --dir. Exits 0 when there is no violation,"
          + " 1 when there is one (or the run could not finish), 2 for bad options."
    })
public final class FaultsMain implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "10m",
      description = "How long the nemesis injects faults, 10s to 24h, e.g. 90s, 30m, 2h (default: ${DEFAULT-VALUE}).")
  private String duration;

  @Option(names = "--seed", paramLabel = "N", description = "The schedule's seed (default: random; printed, so a run can be replayed).")
  private Long seed;

  @Option(names = "--clients", paramLabel = "N", defaultValue = "4", description = "Contending client processes, 2 to 16 (default: ${DEFAULT-VALUE}).")
  private int clients;

  @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "2s", description = "The lease's TTL, 500ms to 60s (default: ${DEFAULT-VALUE}).")
  private String ttl;

  @Option(names = "--dir", paramLabel = "DIR", description = "Where histories, logs and the report go; must be empty or absent (default: a new directory under the temporary directory).")
  private Path dir;

  @Option(names = "--lease-backend", paramLabel = "URI",
      description = "The clients' lease backend (default: the managed core). etcd://, zookeeper:// and leasehold:// endpoints"
          + " are reached through each client's proxies, so client partitions cut them too; node faults apply to the managed"
          + " core only, which always holds the fenced register and the KV writes.")
  private String leaseBackend;

  /**
   * Runs {@code leasehold faults} and exits with its status.
   *
   * @param args the command line
   */
  public static void main(String[] args) {
    System.exit(new CommandLine(new FaultsMain()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Duration d = duration("--duration", duration, Duration.ofSeconds(10), Duration.ofHours(24));
    Duration t = duration("--ttl", ttl, Duration.ofMillis(500), Duration.ofSeconds(60));
    if (clients < 2 || clients > 16) {
      throw bad("--clients must be between 2 and 16; was " + clients);
    }
    if (leaseBackend != null && leaseBackend.strip().toLowerCase(Locale.ROOT).startsWith("memory:")) {
      throw bad("--lease-backend memory: is a store inside one process; the clients are separate processes and"
          + " need a shared store (leave --lease-backend out for the managed core)");
    }
    Path where = dir != null ? dir : java.nio.file.Files.createTempDirectory("leasehold-faults-");
    if (java.nio.file.Files.isDirectory(where)) {
      try (var s = java.nio.file.Files.list(where)) {
        if (s.findAny().isPresent()) {
          throw bad("--dir must be empty or absent, so histories of two runs never mix; " + where + " is not empty");
        }
      }
    } else if (java.nio.file.Files.exists(where)) {
      throw bad("--dir must be a directory; " + where + " is a file");
    }
    long s = seed != null ? seed : new SecureRandom().nextLong();
    PrintWriter out = spec.commandLine().getOut();
    out.println("leasehold faults: seed " + s + " (replay with --seed " + s + "), histories in " + where.toAbsolutePath());
    out.flush();
    Harness.Options options = new Harness.Options(d, s, clients, t, where, leaseBackend == null ? null : leaseBackend.strip(),
        System.getProperty("java.class.path"));
    try (Harness harness = new Harness(options)) {
      Harness.Outcome outcome = harness.run();
      out.print(outcome.report());
      out.println("report: " + where.resolve("report.json").toAbsolutePath());
      out.flush();
      return outcome.result().violations() == 0 ? 0 : 1;
    } catch (IllegalStateException e) {
      spec.commandLine().getErr().println("leasehold faults: the run could not finish: " + e.getMessage()
          + " (logs in " + where.toAbsolutePath() + ")");
      return 1;
    }
  }

  private Duration duration(String option, String value, Duration min, Duration max) {
    Duration d;
    try {
      d = Durations.parse(value);
    } catch (IllegalArgumentException e) {
      throw bad(option + ": " + e.getMessage());
    }
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw bad(option + " must be between " + Durations.format(min) + " and " + Durations.format(max) + "; was " + value);
    }
    return d;
  }

  private ParameterException bad(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
