package io.leasehold.cli;

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
      description = "The lease's time to live (default: ${DEFAULT-VALUE}).")
  private Duration ttl;

  @Option(
      names = "--grace",
      paramLabel = "D",
      description = {
        "Time between SIGTERM and SIGKILL after the lease is lost. Default: the lease's safety"
            + " margin (ttl/10, 1.5s for the default ttl), so the command is gone before the store"
            + " can give the lease to anyone else."
      })
  private Duration grace;

  @Option(names = "--wait", description = "Wait for the lease while another process holds it.")
  private boolean wait;

  @Option(
      names = "--timeout",
      paramLabel = "D",
      description = "With --wait: give up after this long (exit 75). Default: wait for ever.")
  private Duration timeout;

  @Parameters(
      paramLabel = "COMMAND",
      arity = "1..*",
      description = "The command and its arguments; put -- before it.")
  private List<String> command;

  @Override
  public Integer call() throws InterruptedException {
    if (timeout != null && !wait) {
      throw new ParameterException(spec.commandLine(), "--timeout needs --wait");
    }
    if (timeout != null && (timeout.isZero() || timeout.isNegative())) {
      throw new ParameterException(
          spec.commandLine(), "--timeout must be above zero; was " + Durations.format(timeout));
    }
    PrintWriter err = spec.commandLine().getErr();
    LeaseSettings settings;
    try {
      settings = LeaseSettings.builder(leaseName, owner != null ? owner : defaultOwner()).ttl(ttl).build();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Duration stopGrace = grace != null ? grace : settings.safetyMargin();
    if (stopGrace.isNegative()) {
      throw new ParameterException(spec.commandLine(), "--grace must not be negative");
    }
    LeaseBackend store;
    try {
      store = LeaseBackend.open(Backends.orDefault(backend));
    } catch (IllegalArgumentException e) {
      err.println("leasehold run: cannot use backend '" + Backends.orDefault(backend) + "': " + e.getMessage());
      err.println("leasehold run: choose one with --backend URI or LEASEHOLD_BACKEND");
      err.flush();
      return spec.exitCodeOnInvalidInput();
    }
    try (store;
        Lease lease = store.newLease(settings)) {
      LeaseRunner runner = new LeaseRunner(lease, command, wait, timeout, stopGrace, err);
      Thread hook = new Thread(runner::shutdown, "leasehold-run-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      try {
        int status = runner.run();
        if (status == LeaseRunner.UNAVAILABLE) {
          err.println(
              "leasehold run: is the store running? Start a local cluster with `./leasehold dev`,"
                  + " or name yours with --backend or $" + Backends.ENV + ".");
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
