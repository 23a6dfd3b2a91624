package io.leasehold.cli;

import io.leasehold.BackendUris;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code leasehold run}: a distributed flock. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    header = "Runs a command only while this process holds a lease: a distributed flock.",
    synopsisHeading = "%nUsage: ",
    customSynopsis = {
      "leasehold run [--backend URI] --lease NAME [--owner O] [--ttl D] [--grace D]"
          + " [--wait [--timeout D]] -- COMMAND [ARGS...]"
    },
    description = {
      "",
      "Acquires the lease, then runs COMMAND in its own process group with LEASEHOLD_LEASE,"
          + " LEASEHOLD_OWNER and LEASEHOLD_FENCING_TOKEN in its environment. When COMMAND exits"
          + " the lease is released and leasehold run exits with COMMAND's status.",
      "",
      "If the lease is lost while COMMAND runs (taken over, expired, revoked), its process group"
          + " gets SIGTERM at once and SIGKILL after the grace period, and leasehold run exits 70.",
      "",
      "Exit status: COMMAND's status; 75 if the lease is held elsewhere (without --wait) or"
          + " --timeout passed; 70 if the lease was lost while COMMAND ran; 69 if the store could"
          + " not be reached; 127 if COMMAND could not be started; 2 for bad usage.",
      ""
    },
    optionListHeading = "Options:%n")
final class RunCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(
      names = "--backend",
      paramLabel = "URI",
      description = {
        "The lease store: leasehold://host:port,..., etcd://host:2379, zookeeper://host:2181,"
            + " kubernetes:, or memory: (private to this process).",
        "Default: $" + Backends.ENV + ", else what `leasehold dev` starts: " + Backends.DEV_URI + "."
      })
  private String backend;

  @Option(names = "--lease", paramLabel = "NAME", required = true, description = "The lease name.")
  private String leaseName;

  @Option(
      names = "--owner",
      paramLabel = "O",
      description = "Who holds the lease, as shown to others. Default: user@host:pid.")
  private String owner;

  @Option(
      names = "--ttl",
      paramLabel = "D",
      defaultValue = "15s",
      description = "The lease's time to live, 5s to 24h on a store over the network, 1ms to 24h"
          + " on memory: (default: ${DEFAULT-VALUE}).")
  private Duration ttl;

  @Option(
      names = "--grace",
      paramLabel = "D",
      description = {
        "Time between SIGTERM and SIGKILL after the lease is lost. Default: the lease's safety"
            + " margin (ttl/10, 1.5s for the default ttl), so the command is gone before the store"
            + " can give the lease to anyone else. 0ms to 24h."
      })
  private Duration grace;

  @Option(names = "--wait", description = "Wait for the lease while another process holds it.")
  private boolean wait;

  @Option(
      names = "--timeout",
      paramLabel = "D",
      description = "With --wait: give up after this long, 1ms to 24h (exit 75; 69 if the store"
          + " did not answer). Default: wait for ever.")
  private Duration timeout;

  @Parameters(
      paramLabel = "COMMAND",
      arity = "1..*",
      description = "The command and its arguments; put -- before it.")
  private List<String> command;

  /** The longest --timeout and --grace. */
  static final Duration MAX_WAIT = Duration.ofHours(24);

  @Override
  public Integer call() throws InterruptedException {
    Main.quietLibraryLogUnlessVerbose(); // under cron, stderr only when something is wrong
    String uri = Backends.orDefault(backend);
    String uriSource = backend != null ? "--backend" : "$" + Backends.ENV;
    // Every flag first, before the store is opened (ZooKeeper's open alone may take the session
    // timeout): a bad one is exit 2 naming the flag, in the syntax the flag accepts.
    Duration minTtl = Backends.minTtl(uri);
    if (ttl.compareTo(minTtl) < 0 || ttl.compareTo(Backends.MAX_TTL) > 0) {
      throw bad("--ttl must be between " + Durations.format(minTtl) + " and "
          + Durations.format(Backends.MAX_TTL) + " on " + uriDescription(uri) + "; was "
          + Durations.format(ttl)
          + (minTtl.equals(Backends.MIN_NETWORK_TTL)
              ? " (a shorter one leaves the first call, which also connects, too little time;"
                  + " memory: takes down to 1ms)"
              : ""));
    }
    if (timeout != null && !wait) {
      throw bad("--timeout needs --wait");
    }
    if (timeout != null && (timeout.isZero() || timeout.compareTo(MAX_WAIT) > 0)) {
      throw bad("--timeout must be between 1ms and " + Durations.format(MAX_WAIT) + "; was "
          + Durations.format(timeout));
    }
    if (grace != null && grace.compareTo(MAX_WAIT) > 0) {
      throw bad("--grace must be between 0ms and " + Durations.format(MAX_WAIT) + "; was "
          + Durations.format(grace));
    }
    String notRunnable = notRunnable(command.get(0));
    if (notRunnable != null) {
      // Before the lease is taken, and in our words rather than setsid's.
      throw new CommandFailure(ExitStatus.CANNOT_RUN, "cannot run '" + command.get(0) + "': "
          + notRunnable + "; the lease was not taken");
    }
    PrintWriter err = spec.commandLine().getErr();
    LeaseSettings settings;
    try {
      LeaseSettings.builder(leaseName, "o").build();
    } catch (IllegalArgumentException e) {
      throw bad("--lease: " + e.getMessage());
    }
    try {
      settings = LeaseSettings.builder(leaseName, owner != null ? owner : defaultOwner()).ttl(ttl).build();
    } catch (IllegalArgumentException e) {
      throw bad((owner != null ? "--owner: " : "--ttl: ") + e.getMessage());
    }
    Duration stopGrace = grace != null ? grace : settings.safetyMargin();
    LeaseBackend store;
    try {
      store = LeaseBackend.open(uri);
    } catch (IllegalArgumentException e) {
      throw bad(uriSource + " is not a usable backend URI ('" + BackendUris.redacted(uri) + "'): "
          + e.getMessage());
    }
    try (store) {
      String alone = Backends.memoryWarning(uri, "leasehold run", "this lease");
      if (alone != null) {
        err.println("leasehold run: " + alone);
        err.flush();
      }
      Lease lease;
      try {
        lease = store.newLease(settings);
      } catch (IllegalArgumentException e) {
        // A limit only the opened store knows (ZooKeeper: ttl at most its session timeout).
        throw bad("--ttl " + Durations.format(ttl) + " does not suit " + uri + ": " + e.getMessage());
      }
      try (lease) {
        return runHolding(store, lease, stopGrace, uri, err);
      }
    }
  }

  private int runHolding(
      LeaseBackend store, Lease lease, Duration stopGrace, String uri, PrintWriter err)
      throws InterruptedException {
    LeaseRunner runner = new LeaseRunner(lease, command, wait, timeout, stopGrace, err, store);
    Thread hook = new Thread(runner::shutdown, "leasehold-run-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      int status = runner.run();
      if (status == LeaseRunner.UNAVAILABLE) {
        err.println("leasehold run: " + Backends.unreachableHint(uri));
        err.flush();
      }
      return status;
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running: it waits for us
      }
    }
  }

  private static String uriDescription(String uri) {
    String scheme = Backends.scheme(uri);
    return scheme.equals("leasehold") ? "leasehold:// (the core)"
        : scheme.equals("leaseholds") ? "leaseholds:// (the core over TLS)" : scheme + ":";
  }

  private ParameterException bad(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** {@return why {@code program} cannot be run, as a shell would look it up; null if it can} */
  static String notRunnable(String program) {
    if (program.isEmpty()) {
      return "an empty command";
    }
    if (program.contains("/")) {
      Path p = Path.of(program);
      if (!Files.exists(p)) {
        return "no such file";
      }
      return Files.isDirectory(p) || !Files.isExecutable(p) ? "not an executable file" : null;
    }
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(":", -1)) {
      Path p = Path.of(dir.isEmpty() ? "." : dir).resolve(program);
      if (Files.isExecutable(p) && !Files.isDirectory(p)) {
        return null;
      }
    }
    return "command not found on the PATH";
  }

  /** user@host:pid, so two runs on one machine are told apart. */
  static String defaultOwner() {
    return System.getProperty("user.name", "user") + "@" + hostName() + ":"
        + ProcessHandle.current().pid();
  }

  private static String hostName() {
    try { // no DNS lookup on Linux
      String h = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
      if (!h.isEmpty()) {
        return h;
      }
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    String env = System.getenv("HOSTNAME");
    if (env != null && !env.isBlank()) {
      return env.strip();
    }
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "localhost";
    }
  }
}
