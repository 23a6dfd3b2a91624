package io.leasehold.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import io.leasehold.LeaseStoreUnavailableException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code leasehold} command. Exit statuses: {@link ExitStatus}, listed in docs/cli.md. Every
 * command's errors end here, in {@link #badUsage} (exit 2, naming the flag) or {@link #failed}
 * (one line, the status the exception stands for): no command prints a stack trace unless
 * {@code --verbose}.
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
      "To move a cluster's leadership before maintenance: leasehold admin transfer-leader",
      "To see leases at work under faults: leasehold demo",
      "",
      "Tools the ./leasehold script also runs (each has its own jar and --help):",
      "  ./leasehold bench    the load generator and side-by-side benchmark",
      "  ./leasehold faults   the cross-process fault harness and its checker",
      "  ./leasehold micro    JMH micro-benchmarks of the hot paths",
      "",
      "Exit statuses: 0 ok (also a stop asked for by Ctrl-C or SIGTERM); 1 failure; 2 bad usage;"
          + " 69 store unavailable; 75 held elsewhere or timed out (try later); 77 permission"
          + " denied; run also 70 lease lost, 127 command not found. See docs/cli.md."
    },
    subcommands = {
      DevCommand.class,
      ServerCommand.class,
      StatusCommand.class,
      RevokeCommand.class,
      AdminCommand.class,
      AclCommand.class,
      GetCommand.class,
      WatchCommand.class,
      MembersCommand.class,
      RunCommand.class,
      DemoCommand.class,
      HelpCommand.class
    })
public final class Main implements Callable<Integer> {

  /** The SLF4J simple logger's level for the library's loggers; overrides simplelogger.properties. */
  static final String LIBRARY_LOG_LEVEL = "org.slf4j.simpleLogger.log.io.leasehold";

  /** The level of every logger not named in simplelogger.properties: the libraries' (errors only). */
  static final String DEFAULT_LOG_LEVEL = "org.slf4j.simpleLogger.defaultLogLevel";

  /**
   * Third-party loggers simplelogger.properties silences because what they report is routine or is
   * said better by the command itself (an unreachable ZooKeeper: ~190 lines of Curator and
   * ZooKeeper traces before the command's own one line; a leader redirect: an ERROR with a trace).
   * {@code --verbose} shows their warnings again.
   */
  static final String[] QUIETED_LOGGERS = {
    "org.apache.zookeeper",
    "org.apache.curator",
    "org.apache.ratis.client.impl.OrderedAsync",
    "org.apache.ratis.grpc.server.GrpcLogAppender",
  };

  /**
   * Lowers the library's log to warnings, unless {@code --verbose} asked for more: for commands
   * whose output is a timeline on stdout (the demo). Call before anything logs.
   */
  static void quietLibraryLogUnlessVerbose() {
    if (System.getProperty(LIBRARY_LOG_LEVEL) == null) {
      System.setProperty(LIBRARY_LOG_LEVEL, "warn");
    }
  }

  /**
   * Turns the library's log off, unless {@code --verbose} asked for it: for the demo, whose
   * timeline on stdout reports every loss the engine would warn about. Call before anything logs.
   */
  static void silenceLibraryLogUnlessVerbose() {
    if (System.getProperty(LIBRARY_LOG_LEVEL) == null) {
      System.setProperty(LIBRARY_LOG_LEVEL, "off");
    }
  }

  /**
   * gRPC logs through java.util.logging, not SLF4J (Ratis's shaded copy says "INFO: Epoll
   * available" at every start): warnings only, unless --verbose. Held here because JUL keeps its
   * loggers only weakly, and would forget the level.
   */
  private static final java.util.logging.Logger[] GRPC_JUL = {
    java.util.logging.Logger.getLogger("io.grpc"),
    java.util.logging.Logger.getLogger("org.apache.ratis.thirdparty.io.grpc"),
  };

  @Spec private CommandSpec spec;

  /** The command line's entry point; exits the JVM with the command's exit code. */
  public static void main(String[] args) {
    for (java.util.logging.Logger l : GRPC_JUL) {
      l.setLevel(java.util.logging.Level.WARNING);
    }
    Foreground.ownTheJvm();
    // Through Foreground: a command stopped by Ctrl-C or SIGTERM exits with its own status too.
    Foreground.exit(commandLine().execute(args));
  }

  /**
   * Runs one command in this JVM, as {@link #main} would, without exiting: for tests in other
   * modules that drive the command line (the fault harness's end-to-end tests).
   *
   * @param out where the command prints its results
   * @param err where it prints errors
   * @param args the command line
   * @return the exit code
   */
  public static int execute(java.io.PrintWriter out, java.io.PrintWriter err, String... args) {
    return commandLine().setOut(out).setErr(err).execute(args);
  }

  /** {@return the command line, ready to execute; tests set its out and err streams} */
  static CommandLine commandLine() {
    return new CommandLine(new Main())
        .registerConverter(Duration.class, Main::duration)
        .setParameterExceptionHandler(Main::badUsage)
        .setExecutionExceptionHandler(Main::failed);
  }

  /**
   * Must take effect before the first logger exists: picocli calls it while parsing, before any
   * command runs, and nothing logs before a command runs.
   */
  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description = "Show more on stderr: Leasehold's INFO log lines (run and demo hide them"
          + " otherwise), the warnings of the libraries underneath (Ratis, gRPC, Netty, ZooKeeper,"
          + " Curator, etcd, Kubernetes; errors only otherwise), and the stack trace of an error.")
  void verbose(boolean verbose) {
    if (verbose) {
      System.setProperty(LIBRARY_LOG_LEVEL, "info");
      System.setProperty(DEFAULT_LOG_LEVEL, "warn");
      for (String logger : QUIETED_LOGGERS) {
        System.setProperty("org.slf4j.simpleLogger.log." + logger, "warn");
      }
      for (java.util.logging.Logger l : GRPC_JUL) {
        l.setLevel(null); // JUL's default again: INFO
      }
    }
  }

  /** Without a subcommand: bad usage, naming the commands. */
  @Override
  public Integer call() {
    CommandLine cmd = spec.commandLine();
    // One message, not the whole usage (which is what --help is for).
    cmd.getErr().println("leasehold: a command is needed: one of "
        + String.join(", ", cmd.getSubcommands().keySet()));
    cmd.getErr().println("Try 'leasehold --help' for more information.");
    cmd.getErr().flush();
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
    if (e instanceof UnmatchedArgumentException u && cmd.getParent() == null && isUnknownCommand(u, args)) {
      // picocli would suggest the nearest command, however far: "dmeo" got "status".
      err.println(cmd.getColorScheme().errorText(
          "leasehold: '" + args[0] + "' is not a command; the commands are "
              + String.join(", ", cmd.getSubcommands().keySet())
              + " (and bench, faults, micro through ./leasehold)"));
    } else {
      err.println(cmd.getColorScheme().errorText(e.getMessage()));
      if (e instanceof UnmatchedArgumentException && "run".equals(cmd.getCommandName())
          && !List.of(args).contains("--")) {
        // `run --lease x ls -l`: -l is the command's, not run's.
        err.println("leasehold run: put -- before the command, so that its options are not read as"
            + " run's: leasehold run --lease NAME -- COMMAND [ARGS...]");
        err.flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
      }
      if (UnmatchedArgumentException.printSuggestions(e, err)) {
        err.flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
      }
    }
    err.println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for more information.");
    err.flush();
    return cmd.getCommandSpec().exitCodeOnInvalidInput();
  }

  private static boolean isUnknownCommand(UnmatchedArgumentException u, String[] args) {
    return args.length > 0
        && !args[0].startsWith("-")
        && u.getUnmatched().size() > 0
        && u.getUnmatched().get(0).equals(args[0]);
  }

  /**
   * An exception out of a command: one line, {@code leasehold CMD: what went wrong}, and the exit
   * status it stands for; the stack trace only with {@code --verbose}. A {@link CommandFailure}
   * carries its own status; an unreachable store is 69; anything else is 1 and, being unexpected,
   * says how to see where it came from.
   */
  private static int failed(Exception e, CommandLine cmd, ParseResult parsed) {
    PrintWriter err = cmd.getErr();
    Throwable root = Errors.unwrap(e);
    int status;
    String message;
    if (root instanceof CommandFailure f) {
      status = f.status();
      message = f.getMessage();
    } else if (root instanceof LeaseStoreUnavailableException) {
      status = ExitStatus.UNAVAILABLE;
      message = Errors.describe(root);
    } else if (root instanceof InterruptedException) {
      status = ExitStatus.INTERRUPTED;
      message = "interrupted";
    } else if (root instanceof UncheckedIOException || root instanceof IOException) {
      status = ExitStatus.FAILURE;
      message = Errors.describe(root);
    } else {
      status = ExitStatus.FAILURE;
      message = "unexpected error: " + Errors.describe(root) + " (" + root.getClass().getName()
          + "; --verbose shows where it came from)";
    }
    err.println(cmd.getColorScheme().errorText(cmd.getCommandSpec().qualifiedName() + ": " + message));
    if (verbose(parsed)) {
      e.printStackTrace(err);
    }
    err.flush();
    return status;
  }

  private static boolean verbose(ParseResult parsed) {
    List<String> args = parsed != null ? parsed.originalArgs() : List.of();
    int end = args.indexOf("--");
    return (end < 0 ? args : args.subList(0, end)).contains("--verbose");
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
