package io.leasehold.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code leasehold} command. Exit codes: 0 success, 1 failure (an unsafe demo run included),
 * 2 bad usage.
 */
@Command(
    name = "leasehold",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Leasehold: distributed leases for Java.",
    footer = {
      "",
      "A local cluster to develop against: leasehold dev; then, in another terminal: leasehold status",
      "A command run only while a lease is held: leasehold run --lease NAME -- COMMAND",
      "To take a lease away from its holder (it stops first): leasehold revoke NAME",
      "To see leases at work under faults: leasehold demo"
    },
    subcommands = {
      DevCommand.class,
      ServerCommand.class,
      StatusCommand.class,
      RevokeCommand.class,
      RunCommand.class,
      DemoCommand.class,
      HelpCommand.class
    })
public final class Main implements Callable<Integer> {

  /** The SLF4J simple logger's level for the library's loggers; overrides simplelogger.properties. */
  static final String LIBRARY_LOG_LEVEL = "org.slf4j.simpleLogger.log.io.leasehold";

  /**
   * Lowers the library's log to warnings, unless {@code --verbose} asked for more: for commands
   * whose output is a timeline on stdout (the demo). Call before anything logs.
   */
  static void quietLibraryLogUnlessVerbose() {
    if (System.getProperty(LIBRARY_LOG_LEVEL) == null) {
      System.setProperty(LIBRARY_LOG_LEVEL, "warn");
    }
  }

  @Spec private CommandSpec spec;

  /** The command line's entry point; exits the JVM with the command's exit code. */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** {@return the command line, ready to execute; tests set its out and err streams} */
  static CommandLine commandLine() {
    return new CommandLine(new Main())
        .registerConverter(Duration.class, Main::duration)
        .setParameterExceptionHandler(Main::badUsage);
  }

  /**
   * Must take effect before the first logger exists: picocli calls it while parsing, before any
   * command runs, and nothing logs before a command runs.
   */
  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description = "Show the demo's INFO log lines on stderr, not only warnings (server, dev and"
          + " status always show them).")
  void verbose(boolean verbose) {
    if (verbose) {
      System.setProperty(LIBRARY_LOG_LEVEL, "info");
    }
  }

  /** Without a subcommand: the usage, as an error. */
  @Override
  public Integer call() {
    CommandLine cmd = spec.commandLine();
    cmd.getErr().println("leasehold: a command is needed");
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

  /** Bad usage: the message and a pointer to the help, not the whole usage text. */
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

  /** The version the build wrote into {@code version.properties}. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"leasehold " + version()};
    }
  }

  static String version() {
    try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        return "(unknown version)";
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version", "(unknown version)");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
