package io.leasehold.faults;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code leasehold faults}: runs the fault harness and its checker. */
@Command(
    name = "leasehold faults",
    mixinStandardHelpOptions = true,
    subcommands = {Soak.class, CheckCommand.class},
    header = "Runs a 3-node core, a lease store and contending lease clients under injected faults, then checks their histories.",
    description = {
      "Starts 3 core nodes (and, with --lease-backend etcd|zookeeper, 3 members of that store) and --clients lease"
          + " clients as separate JVMs on loopback, every byte between them through proxies, and injects one fault at a"
          + " time on a schedule drawn from --seed: kill -9, SIGSTOP (also of the store's leader for 2-3 TTLs),"
          + " partitions and peer-only isolation of a node; SIGSTOP, partition and kill -9 of a client; an operator's"
          + " delete of a held lease; a clock running fast or slow. Then it heals everything, stops the clients and"
          + " checks, per lease: no overlapping tenures, fencing tokens only grow, no fenced write accepted from a stale"
          + " holder; and that no acknowledged write was lost; and reports how long a lease had no holder after each fault.",
      "Histories, node logs, report.txt and report.json stay in --dir. Exits 0 when there is no violation,"
          + " 1 when there is one (or the run could not finish), 2 for bad options.",
      "'leasehold faults soak' runs many seeds and prints one table; 'leasehold faults check DIR' checks a run's"
          + " histories again."
    })
public final class FaultsMain implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Mixin private RunOptions run;

  @Option(names = "--seed", paramLabel = "N", description = "The schedule's seed (default: random; printed, so a run can be replayed).")
  private Long seed;

  @Option(names = "--dir", paramLabel = "DIR", description = "Where histories, logs and the report go; must be empty or absent (default: a new directory under the temporary directory).")
  private Path dir;

  /**
   * Runs {@code leasehold faults} and exits with its status.
   *
   * @param args the command line
   */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /**
   * {@return the command line, as {@code leasehold}'s: a bad option is its message and a pointer
   * to --help (exit 2), not the whole usage after it}
   */
  static CommandLine commandLine() {
    return new CommandLine(new FaultsMain())
        .setParameterExceptionHandler(
            (e, args) -> {
              CommandLine cmd = e.getCommandLine();
              cmd.getErr().println(e.getMessage());
              if (!CommandLine.UnmatchedArgumentException.printSuggestions(e, cmd.getErr())) {
                cmd.getErr().println("Try 'leasehold faults" + (cmd.getParent() != null ? " " + cmd.getCommandName() : "")
                    + " --help' for more information.");
              }
              cmd.getErr().flush();
              return cmd.getCommandSpec().exitCodeOnInvalidInput();
            });
  }

  @Override
  public Integer call() throws Exception {
    long s = seed != null ? seed : new SecureRandom().nextLong();
    run.toOptions(spec, s, Path.of(".")); // every option checked before anything is made
    if (dir != null) {
      RunOptions.checkEmpty(spec, dir);
    }
    Path where = dir != null ? dir : Files.createTempDirectory("leasehold-faults-");
    Harness.Options options = run.toOptions(spec, s, where);
    PrintWriter out = spec.commandLine().getOut();
    out.println("leasehold faults: seed " + s + " (replay with --seed " + s + "), histories in " + where.toAbsolutePath());
    out.flush();
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
}
