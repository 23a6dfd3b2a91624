package io.leasehold.faults;

import io.leasehold.cli.Durations;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The options of a run, shared by {@code leasehold faults} and {@code leasehold faults soak}. */
final class RunOptions {

  @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "10m",
      description = "How long the nemesis injects faults, 10s to 24h, e.g. 90s, 30m, 2h; the first round of every"
          + " fault type always completes (default: ${DEFAULT-VALUE}).")
  String duration;

  @Option(names = "--clients", paramLabel = "N", defaultValue = "4", description = "Contending client processes, 2 to 16 (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--leases", paramLabel = "N", defaultValue = "3",
      description = "Lease names every client contends for, 1 to 16; each has its own fenced register and is checked"
          + " on its own (default: ${DEFAULT-VALUE}).")
  int leases;

  @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "2s", description = "The leases' TTL, 500ms to 60s (default: ${DEFAULT-VALUE}).")
  String ttl;

  @Option(names = "--lease-backend", paramLabel = "STORE|URI",
      description = "The clients' lease store (default: the managed core). 'etcd' or 'zookeeper': the harness runs a"
          + " 3-member cluster of that store and its node faults hit those members too. A URI (etcd://, zookeeper://,"
          + " leasehold://): used as given, its endpoints reached through each client's links; node faults and"
          + " operator deletes then hit only the managed core, which always holds the registers and KV writes.")
  String leaseBackend;

  @Option(names = "--faults", paramLabel = "TYPE[,TYPE...]", split = ",",
      description = "The fault types to inject (default: all): kill-node, pause-node, pause-leader-long,"
          + " partition-node, isolate-node, pause-holder, partition-client, kill-client, operator-delete, clock-skew,"
          + " membership-change, late-copy (late-copy only with the managed core as the lease store: it is left out"
          + " of the default for --lease-backend etcd, zookeeper or a URI, and refused when asked for).")
  Set<String> faults;

  @Option(names = "--session-per-lease",
      description = "Each lease of a client on a backend of its own, so a client keeps as many sessions as leases"
          + " (default: one backend, one session per client, as an application would).")
  boolean sessionPerLease;

  @Option(names = "--max-clock-drift", paramLabel = "FRACTION", defaultValue = "0.01",
      description = "The leases' maxClockDrift, 0 to 0.5 (default: ${DEFAULT-VALUE}, the library's default).")
  double maxClockDrift;

  @Option(names = "--clock-skew", paramLabel = "FRACTION",
      description = "How far clock-skew faults move a clock's rate from 1, 0 to 0.5 (default: --max-clock-drift)."
          + " A skew beyond --max-clock-drift runs, but the checker reports it as outside the configured bounds:"
          + " not a pass.")
  Double clockSkew;

  /**
   * Checks the options and makes a run's options.
   *
   * @param spec the command, for errors
   * @param seed the run's seed
   * @param dir the run's directory
   * @return the options
   * @throws ParameterException naming the option, the allowed range and the value
   */
  Harness.Options toOptions(CommandSpec spec, long seed, Path dir) {
    Duration d = duration(spec, "--duration", duration, Duration.ofSeconds(10), Duration.ofHours(24));
    Duration t = duration(spec, "--ttl", ttl, Duration.ofMillis(500), Duration.ofSeconds(60));
    if (clients < 2 || clients > 16) {
      throw bad(spec, "--clients must be between 2 and 16; was " + clients);
    }
    if (leases < 1 || leases > 16) {
      throw bad(spec, "--leases must be between 1 and 16; was " + leases);
    }
    if (!(maxClockDrift >= 0 && maxClockDrift <= 0.5)) {
      throw bad(spec, "--max-clock-drift must be between 0 and 0.5; was " + maxClockDrift);
    }
    double skew = clockSkew != null ? clockSkew : maxClockDrift;
    if (!(skew >= 0 && skew <= 0.5)) {
      throw bad(spec, "--clock-skew must be between 0 and 0.5; was " + skew);
    }
    String backend = leaseBackend == null ? null : leaseBackend.strip();
    if (backend != null) {
      String lower = backend.toLowerCase(Locale.ROOT);
      if (lower.startsWith("memory:")) {
        throw bad(spec, "--lease-backend memory: is a store inside one process; the clients are separate processes and"
            + " need a shared store (leave --lease-backend out for the managed core)");
      }
      if (lower.equals("etcd") || lower.equals("zookeeper")) {
        backend = lower;
      } else if (lower.equals("core")) {
        backend = null;
      } else if (!lower.contains(":")) {
        throw bad(spec, "--lease-backend must be etcd, zookeeper, core or a backend URI; was '" + io.leasehold.BackendUris.redacted(leaseBackend) + "'");
      } else {
        checkUri(spec, backend);
      }
    }
    Set<FaultType> types = EnumSet.allOf(FaultType.class);
    if (faults != null && !faults.isEmpty()) {
      types = EnumSet.noneOf(FaultType.class);
      for (String f : faults) {
        String name = f.strip().toUpperCase(Locale.ROOT).replace('-', '_');
        try {
          types.add(FaultType.valueOf(name));
        } catch (IllegalArgumentException e) {
          throw bad(spec, "--faults: '" + f + "' is not a fault type; the types are " + typeNames());
        }
      }
      if (types.contains(FaultType.LATE_COPY) && backend != null) {
        throw bad(spec, "--faults: late-copy is offered only with the managed core as the lease store (leave out"
            + " --lease-backend): its copies come from the gRPC relays only the core's clients go through; was"
            + " --lease-backend " + io.leasehold.BackendUris.redacted(backend));
      }
    }
    return new Harness.Options(d, seed, clients, leases, t, dir, backend, maxClockDrift, skew, types, sessionPerLease,
        System.getProperty("java.class.path"));
  }
  /** {@return every fault type as {@code --faults} takes it, in the enum's order} */
  private static String typeNames() {
    return java.util.Arrays.stream(FaultType.values())
        .map(t -> t.name().toLowerCase(Locale.ROOT).replace('_', '-'))
        .collect(java.util.stream.Collectors.joining(", "));
  }


  /** The schemes of the backends the harness's clients can open, from other processes. */
  private static final Set<String> URI_SCHEMES = Set.of("leasehold", "etcd", "zookeeper", "kubernetes");

  /**
   * Checks a backend URI before anything starts: its scheme, and each host:port the
   * harness puts a proxy in front of; otherwise 3 nodes start first, then a stack trace.
   */
  private static void checkUri(CommandSpec spec, String uri) {
    String scheme = uri.substring(0, uri.indexOf(':')).toLowerCase(Locale.ROOT);
    if (!URI_SCHEMES.contains(scheme)) {
      throw bad(spec, "--lease-backend: '" + scheme + ":' is not a backend's scheme; use one of leasehold://,"
          + " etcd://, zookeeper://, kubernetes: (was '" + io.leasehold.BackendUris.redacted(uri) + "')");
    }
    if (scheme.equals("kubernetes")) {
      return;
    }
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("^[a-zA-Z]+://([^/?#]+).*$").matcher(uri);
    if (!m.matches()) {
      throw bad(spec, "--lease-backend: " + scheme + ":// needs host:port[,host:port...]; was '" + io.leasehold.BackendUris.redacted(uri) + "'");
    }
    for (String part : m.group(1).split(",")) {
      try {
        io.leasehold.client.CoreBackendProvider.endpoints("leasehold://" + part);
      } catch (IllegalArgumentException e) {
        throw bad(spec, "--lease-backend: '" + part + "' in '" + uri + "' is not host:port: " + e.getMessage());
      }
    }
  }

  /** Checks that {@code dir} is absent or empty (histories of two runs never mix). */
  static void checkEmpty(CommandSpec spec, Path dir) throws IOException {
    if (Files.isDirectory(dir)) {
      try (var s = Files.list(dir)) {
        if (s.findAny().isPresent()) {
          throw bad(spec, "--dir must be empty or absent, so histories of two runs never mix; " + dir + " is not empty");
        }
      }
    } else if (Files.exists(dir)) {
      throw bad(spec, "--dir must be a directory; " + dir + " is a file");
    }
  }

  private static Duration duration(CommandSpec spec, String option, String value, Duration min, Duration max) {
    Duration d;
    try {
      d = Durations.parse(value);
    } catch (IllegalArgumentException e) {
      throw bad(spec, option + ": " + e.getMessage());
    }
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw bad(spec, option + " must be between " + Durations.format(min) + " and " + Durations.format(max) + "; was " + value);
    }
    return d;
  }

  static ParameterException bad(CommandSpec spec, String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
