package io.leasehold.bench;

import io.leasehold.cli.Durations;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * {@code leasehold bench}: the load generator. Tables go to stdout, progress and logs to stderr.
 * Exit status: 0 ran, 1 could not run or a safety figure was not 0, 2 bad usage.
 */
@Command(
    name = "leasehold bench",
    mixinStandardHelpOptions = true,
    description = {
      "Load generator for any Leasehold backend, and a side-by-side run of the core, etcd and ZooKeeper.",
      "Each workload prints a table on stdout and writes a JSON file. See docs/bench.md."
    },
    subcommands = {
      AcquireReleaseCommand.class,
      ContendedCommand.class,
      WaitersCommand.class,
      HoldCommand.class,
      FailoverCommand.class,
      ExpireStormCommand.class,
      RollingRestartCommand.class,
      ColdStartCommand.class,
      CompareCommand.class,
      HelpCommand.class
    })
public final class BenchMain implements Callable<Integer> {

  /** The SLF4J simple logger's level for the library's loggers; overrides the jar's simplelogger.properties. */
  static final String LIBRARY_LOG_LEVEL = "org.slf4j.simpleLogger.log.io.leasehold";

  /**
   * The holder engine's logger, which warns once per lost lease. A hundred thousand held leases
   * that all expire would write as many lines, synchronously, from the threads that renew the
   * others; the bench counts losses in its figures instead.
   */
  static final String ENGINE_LOG_LEVEL = "org.slf4j.simpleLogger.log.io.leasehold.spi.ManagedLease";

  @Spec CommandSpec spec;

  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description = "Show the library's INFO log on stderr (each acquisition, each loss); by default only warnings.")
  void verbose(boolean verbose) {
    if (verbose) {
      System.setProperty(LIBRARY_LOG_LEVEL, "info");
      System.setProperty(ENGINE_LOG_LEVEL, "info");
    }
  }

  /**
   * Runs the command line and exits with its status.
   *
   * @param args the arguments
   */
  public static void main(String[] args) {
    quietLogs();
    System.exit(commandLine().execute(args));
  }

  /**
   * A hundred thousand acquisitions must not log a line each: the library at warnings only, the
   * engine at errors only, unless {@code --verbose} or a system property says otherwise. Call
   * before anything logs.
   */
  static void quietLogs() {
    if (System.getProperty(LIBRARY_LOG_LEVEL) == null) {
      System.setProperty(LIBRARY_LOG_LEVEL, "warn");
    }
    if (System.getProperty(ENGINE_LOG_LEVEL) == null) {
      System.setProperty(ENGINE_LOG_LEVEL, "error");
    }
  }

  /** {@return the command line, ready to execute; tests set its streams} */
  static CommandLine commandLine() {
    return new CommandLine(new BenchMain())
        .registerConverter(Duration.class, BenchMain::duration)
        .setParameterExceptionHandler(BenchMain::badUsage);
  }

  @Override
  public Integer call() {
    CommandLine cmd = spec.commandLine();
    cmd.getErr().println("leasehold bench: a workload is needed");
    cmd.usage(cmd.getErr());
    return cmd.getCommandSpec().exitCodeOnInvalidInput();
  }

  private static Duration duration(String text) {
    try {
      return Durations.parse(text);
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }

  private static int badUsage(ParameterException e, String[] args) {
    CommandLine cmd = e.getCommandLine();
    PrintWriter err = cmd.getErr();
    err.println(cmd.getColorScheme().errorText(e.getMessage()));
    if (!UnmatchedArgumentException.printSuggestions(e, err)) {
      err.println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for more information.");
    }
    err.flush();
    return cmd.getCommandSpec().exitCodeOnInvalidInput();
  }
}
