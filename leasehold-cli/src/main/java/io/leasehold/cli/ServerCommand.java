package io.leasehold.cli;

import io.leasehold.server.AccessSettings;
import io.leasehold.server.Backup;
import io.leasehold.server.CoreNode;
import io.leasehold.server.Limits;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.StartRefusedException;
import io.leasehold.server.TlsConfig;
import io.leasehold.server.http.StatusHttpServer;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold server}: one node of the consistent core, in the foreground. */
@Command(
    name = "server",
    mixinStandardHelpOptions = true,
    header = "Runs one node of the Leasehold core until Ctrl-C or SIGTERM.",
    description = {
      "Runs one node of the consistent core in the foreground, logging to stderr, until Ctrl-C or"
          + " SIGTERM stops it cleanly. Start one on each machine with the same --peers; the"
          + " cluster serves once a majority runs. Clients connect to any node's port; the nodes"
          + " replicate through the port after it (Raft port = port + 1).",
      "The data directory keeps the node's log and snapshots. The first start of each node of a"
          + " new cluster needs --bootstrap, which formats the empty directory; every later start"
          + " goes without it and recovers the data. A node whose directory is missing or empty"
          + " is refused: a node that lost its data must not rejoin and vote, or acknowledged"
          + " leases could be lost and fencing tokens issued again. A node added to a running"
          + " cluster starts once with --join instead (then `leasehold admin add-node`).",
      "Every node needs the same --election-timeout: a node that finds another running with a"
          + " different one refuses to start, and a running node that finds one refuses reads and"
          + " keep-alives until they agree.",
      "Exits 0 when stopped; 1 if the node cannot start (a port taken, an unusable data"
          + " directory) or stops by itself (Ratis closed its Raft server: the cluster removed it,"
          + " or a JVM pause was too long); 2 for bad options, and when it refuses to start (its data directory does"
          + " not fit --bootstrap, or another node's election timeout differs)."
    })
final class ServerCommand implements Callable<Integer> {

  /** How long a leader being stopped waits for a follower to take over before it stops anyway. */
  static final Duration HAND_OVER_LIMIT = Duration.ofSeconds(5);

  /**
   * How long a node being stopped then waits for the calls it holds to be answered before it
   * cancels them (see {@link io.leasehold.server.CoreNode#awaitCallsAnswered}). A quiet node
   * waits not at all; one whose clients keep sending (they move once answers name the new leader)
   * may wait the whole time: its stop is slower, none of its clients' calls is.
   */
  static final Duration CALLS_ANSWERED_LIMIT = Duration.ofMillis(500);

  // The ranges NodeConfig enforces, repeated here to name the command line's options.
  static final Duration MIN_ELECTION_TIMEOUT = Duration.ofMillis(50);
  static final Duration MAX_ELECTION_TIMEOUT = Duration.ofMinutes(1);
  static final long MIN_SNAPSHOT_EVERY = 10;

  @Spec private CommandSpec spec;

  @Option(
      names = "--id",
      required = true,
      paramLabel = "ID",
      description = "This node's id; one of the ids in --peers.")
  private String id;

  @Option(
      names = "--peers",
      required = true,
      paramLabel = "ID=HOST:PORT,...",
      description = {
        "Every node of the cluster, this one included, the same on every node: e.g.",
        "n1=10.0.0.1:7000,n2=10.0.0.2:7000,n3=10.0.0.3:7000. Ids are 1 to 64 letters, digits,"
            + " '-' or '_'; PORT (1 to 65534) is where clients connect, PORT + 1 is for Raft."
      })
  private String peers;

  @Option(
      names = "--data-dir",
      required = true,
      paramLabel = "DIR",
      description = "Where the node keeps its Raft log and snapshots. Recovered on every start but"
          + " the first; created and formatted only with --bootstrap.")
  private Path dataDir;

  @Option(
      names = "--bootstrap",
      description = {
        "First start of a node of a new cluster: format --data-dir, which must be missing or"
            + " empty (a directory with data is refused, never wiped). Give it once, on every node"
            + " of the first --peers; leave it out on every later start."
      })
  private boolean bootstrap;

  @Option(
      names = "--restore",
      paramLabel = "FILE",
      description = "With --bootstrap: seed this node of a new cluster with a backup from `leasehold admin"
          + " snapshot save`. Give every node of the new cluster the same FILE.")
  private Path restore;

  @Option(
      names = "--bump-revision",
      paramLabel = "N",
      defaultValue = "1000000000000",
      description = "With --restore: move the revision, and so every fencing token, N past the backup's, so"
          + " that no token the old cluster issued after the backup is issued again; 0 to 10^15"
          + " (default: ${DEFAULT-VALUE}).")
  private long bumpRevision;

  static final long MAX_BUMP_REVISION = 1_000_000_000_000_000L;

  @Option(
      names = "--join",
      description = {
        "The first start of a node that joins a running cluster: formats the empty --data-dir"
            + " and waits, without a vote, until an operator adds it (`leasehold admin add-node"
            + " ID=HOST:PORT`); --peers names the running members and this node. Every later start"
            + " goes without it. See docs/operations.md."
      })
  private boolean join;

  @Option(
      names = "--election-timeout",
      paramLabel = "DURATION",
      defaultValue = "300ms",
      description = {
        "Shortest Raft election timeout, 50ms to 1m (default: ${DEFAULT-VALUE}); the longest is"
            + " 1.5 x it. Shorter: faster failover, more spurious elections on a loaded machine.",
        "The same on every node: the Raft leader lease behind keep-alives and reads assumes it."
            + " A node that finds another with a different one refuses to start (exit 2)."
      })
  private Duration electionTimeout;

  @Option(
      names = "--snapshot-every",
      paramLabel = "N",
      defaultValue = "100000",
      description = "Take a snapshot after N log entries, and drop the log before it; at least 10"
          + " (default: ${DEFAULT-VALUE}).")
  private long snapshotEvery;

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      description = "Serve /metrics (Prometheus), /healthz, /readyz and a status page (/) over HTTP"
          + " on PORT, 0 to 65535 (0 picks a free one), on the node's address from --peers"
          + " (default: no HTTP).")
  private Integer httpPort;

  @Option(
      names = "--tls-cert",
      paramLabel = "FILE",
      description = {
        "TLS on every port of this node (with --tls-key and --tls-ca; all three or none): the"
            + " node's certificate chain, PEM. It must name the node's host from --peers (a DNS or"
            + " IP subject alternative name) and allow TLS server and client use: the node shows it"
            + " to clients and to the other nodes. Re-read when the file changes (see docs/security.md)."
      })
  private Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "FILE", description = "The node's private key, PEM (PKCS#8, RSA or EC).")
  private Path tlsKey;

  @Option(
      names = "--tls-ca",
      paramLabel = "FILE",
      description = "The certificate authorities this node trusts, PEM: client certificates and the other nodes'"
          + " certificates must be issued by one of them.")
  private Path tlsCa;

  @Option(
      names = "--client-auth",
      paramLabel = "require|optional",
      description = {
        "With TLS: whether clients must show a certificate from --tls-ca (default: require)."
            + " optional lets clients without one connect (encrypted, the node authenticated);"
            + " the other nodes always need one."
      })
  private String clientAuth;

  @Option(
      names = "--root-identity",
      paramLabel = "SUBJECT",
      description = {
        "With --bootstrap and TLS: turn access control on, with this client certificate subject"
            + " (RFC 2253, e.g. \"CN=admin,O=Acme\") as the root identity, which has every right and"
            + " grants the others (`leasehold acl`). Give every bootstrap node the same. Kept in the"
            + " cluster's log: later starts take no --root-identity. See docs/security.md."
      })
  private String rootIdentity;

  @Option(
      names = "--max-sessions-per-identity",
      paramLabel = "N",
      defaultValue = "" + AccessSettings.DEFAULT_MAX_SESSIONS_PER_IDENTITY,
      description = "How many sessions one client identity may hold at once, 1 to "
          + AccessSettings.MAX_SESSIONS_PER_IDENTITY + " (default: ${DEFAULT-VALUE});"
          + " a grant beyond it is refused with RESOURCE_EXHAUSTED. In plaintext every client is one"
          + " identity (anonymous).")
  private int maxSessionsPerIdentity;

  // Limits (docs/security.md, "Limits"): the ranges are Limits's, which names the flag when refusing.
  @Option(
      names = "--max-keys-per-session",
      paramLabel = "N",
      defaultValue = "" + Limits.DEFAULT_KEYS_PER_SESSION,
      description = "Keys, held leases included, that one session may have, and keys attached to one"
          + " tenure; 1 to " + Limits.MOST_KEYS_PER_SESSION
          + " (default: ${DEFAULT-VALUE}). A client's leases of one TTL share one session.")
  private int maxKeysPerSession;

  @Option(
      names = "--max-key-bytes",
      paramLabel = "N",
      defaultValue = "" + Limits.MOST_KEY_BYTES,
      description = "Bytes (UTF-8) of a key a client writes, deletes or reads; " + Limits.LEAST_KEY_BYTES + " to "
          + Limits.MOST_KEY_BYTES + " (default: ${DEFAULT-VALUE}). Named leases' keys follow the lease-name rule.")
  private int maxKeyBytes;

  @Option(
      names = "--max-value-bytes",
      paramLabel = "N",
      defaultValue = "" + Limits.MOST_VALUE_BYTES,
      description = "Bytes of a value; " + Limits.LEAST_VALUE_BYTES + " to " + Limits.MOST_VALUE_BYTES
          + " (default: ${DEFAULT-VALUE}).")
  private int maxValueBytes;

  @Option(
      names = "--max-watchers-per-connection",
      paramLabel = "N",
      defaultValue = "" + Limits.DEFAULT_WATCHERS_PER_CONNECTION,
      description = "Watches open at once on one client connection; 1 to " + Limits.MOST_PER_CONNECTION
          + " (default: ${DEFAULT-VALUE}).")
  private int maxWatchersPerConnection;

  @Option(
      names = "--max-watch-backlog",
      paramLabel = "EVENTS",
      defaultValue = "" + Limits.DEFAULT_WATCH_BACKLOG,
      description = "Events a watcher that reads too slowly may fall behind before its watch is ended (the"
          + " client watches again from the revision it is told); 1 to " + Limits.MOST_WATCH_BACKLOG
          + " (default: ${DEFAULT-VALUE}). At most " + (Limits.WATCH_BACKLOG_BYTES >> 20) + " MiB of them, whatever this says.")
  private int maxWatchBacklog;

  @Option(
      names = "--watch-history-bytes",
      paramLabel = "BYTES",
      defaultValue = "" + Limits.DEFAULT_WATCH_HISTORY_BYTES,
      description = "Bytes of past events the node keeps so that a watch can resume from an earlier revision"
          + " (also at most " + Limits.WATCH_HISTORY_EVENTS + " events; a watch from before them is told to"
          + " read again); " + Limits.LEAST_WATCH_HISTORY_BYTES + " to " + Limits.MOST_WATCH_HISTORY_BYTES
          + " (default: ${DEFAULT-VALUE}).")
  private long watchHistoryBytes;

  @Option(
      names = "--max-in-flight-per-connection",
      paramLabel = "N",
      defaultValue = "" + Limits.DEFAULT_IN_FLIGHT_PER_CONNECTION,
      description = "Calls other than watches open at once on one client connection (a keep-alive stream"
          + " counts as one); " + Limits.LEAST_IN_FLIGHT + " to " + Limits.MOST_PER_CONNECTION
          + " (default: ${DEFAULT-VALUE}).")
  private int maxInFlightPerConnection;

  @Option(
      names = "--max-connection-age",
      paramLabel = "DURATION",
      defaultValue = "30m",
      description = "How long a client connection may live before the node asks the client to reconnect"
          + " (±10 % jitter; calls still open end 10s later; clients reconnect on their own): how long a"
          + " connection keeps a CA removed from --tls-ca or a revoked watch right; 1s to 720h (30 days)"
          + " (default: ${DEFAULT-VALUE}).")
  private Duration maxConnectionAge;

  @Option(
      names = "--handshake-timeout",
      paramLabel = "DURATION",
      defaultValue = "10s",
      description = "How long a new client connection may take to finish its TLS or HTTP/2 handshake before"
          + " it is closed; 1s to 2m (default: ${DEFAULT-VALUE}).")
  private Duration handshakeTimeout;

  @Option(
      names = "--max-connections",
      paramLabel = "N",
      defaultValue = "" + Limits.DEFAULT_MAX_CONNECTIONS,
      description = "Client connections the node holds open at once, counted from their accept: one over"
          + " it is closed at once, before its handshake (the client tries again after its back-off);"
          + " 1 to " + Limits.MOST_CONNECTIONS + " (default: ${DEFAULT-VALUE}).")
  private int maxConnections;

  @Option(
      names = "--max-connections-per-address",
      paramLabel = "N",
      defaultValue = "" + Limits.DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
      description = "Client connections open at once from one IP address, so that one host cannot take"
          + " all of --max-connections; 1 to " + Limits.MOST_CONNECTIONS + " (default: ${DEFAULT-VALUE}).")
  private int maxConnectionsPerAddress;

  @Option(
      names = "--max-data-bytes",
      paramLabel = "BYTES",
      defaultValue = "" + Limits.DEFAULT_DATA_BYTES,
      description = "Data bytes the cluster's state may hold (keys and values, session owners, and "
          + io.leasehold.server.replicated.CoreState.DATA_BYTES_PER_ENTRY + " per key and session) before"
          + " puts, compare-and-sets, grants and acquires of new names are refused; deletes, releases,"
          + " revokes, keep-alives and reads still work. " + Limits.LEAST_DATA_BYTES + " to "
          + Limits.MOST_DATA_BYTES + " (default: ${DEFAULT-VALUE}, for a 1 GiB heap; docs/security.md).")
  private long maxDataBytes;

  /**
   * {@return the node's configuration}
   *
   * @throws ParameterException naming the option that is wrong, the allowed range and the value
   */
  NodeConfig config() {
    if (electionTimeout.compareTo(MIN_ELECTION_TIMEOUT) < 0
        || electionTimeout.compareTo(MAX_ELECTION_TIMEOUT) > 0) {
      throw bad(
          "--election-timeout must be between "
              + Durations.format(MIN_ELECTION_TIMEOUT)
              + " and "
              + Durations.format(MAX_ELECTION_TIMEOUT)
              + "; was "
              + Durations.format(electionTimeout));
    }
    if (httpPort != null && (httpPort < 0 || httpPort > 65535)) {
      throw bad("--http-port must be between 0 and 65535; was " + httpPort);
    }
    if (snapshotEvery < MIN_SNAPSHOT_EVERY) {
      throw bad("--snapshot-every must be at least " + MIN_SNAPSHOT_EVERY + "; was " + snapshotEvery);
    }
    List<Peer> cluster;
    try {
      cluster = Peer.parseAll(peers);
    } catch (IllegalArgumentException e) {
      throw bad("--peers is not valid: " + e.getMessage() + " (was '" + peers + "')");
    }
    checkDistinctPorts(cluster);
    if (cluster.stream().noneMatch(p -> p.id().equals(id))) {
      throw bad(
          "--id must be one of the ids in --peers ("
              + String.join(", ", cluster.stream().map(Peer::id).toList())
              + "); was '"
              + id
              + "'");
    }
    if (Files.exists(dataDir) && !Files.isDirectory(dataDir)) {
      throw bad("--data-dir must be a directory; " + dataDir + " is a file");
    }
    if (bootstrap && join) {
      throw bad("--bootstrap (the first start of a new cluster) and --join (a node added to a running"
          + " one) exclude each other");
    }
    TlsConfig tls = tls();
    if (rootIdentity != null && !bootstrap) {
      throw bad("--root-identity needs --bootstrap: access control is set when a cluster is made, and"
          + " kept in its log (later starts take no --root-identity)");
    }
    if (rootIdentity != null && tls == null) {
      throw bad("--root-identity needs TLS (--tls-cert, --tls-key, --tls-ca): without client certificates"
          + " every client is anonymous and nobody could be the root");
    }
    try {
      // AccessSettings and Limits name the flag and its range when they refuse a value.
      return NodeConfig.of(id, cluster, dataDir)
          .withElectionTimeout(electionTimeout)
          .withSnapshots(snapshotEvery, NodeConfig.DEFAULT_LOG_SEGMENT_BYTES)
          .withStartMode(
              bootstrap ? NodeConfig.StartMode.BOOTSTRAP : join ? NodeConfig.StartMode.JOIN : NodeConfig.StartMode.RECOVER)
          .withTls(tls)
          .withAccess(new AccessSettings(rootIdentity, maxSessionsPerIdentity))
          .withLimits(
              new Limits(
                  maxKeysPerSession,
                  maxKeyBytes,
                  maxValueBytes,
                  maxWatchersPerConnection,
                  maxWatchBacklog,
                  maxInFlightPerConnection,
                  watchHistoryBytes,
                  maxConnectionAge,
                  handshakeTimeout,
                  maxConnections,
                  maxConnectionsPerAddress,
                  maxDataBytes));
    } catch (IllegalArgumentException e) {
      throw bad(e.getMessage());
    }
  }

  /** {@return TLS from the three files, or null for none}; each flag's mistake named */
  private TlsConfig tls() {
    Path[] files = {tlsCert, tlsKey, tlsCa};
    String[] names = {"--tls-cert", "--tls-key", "--tls-ca"};
    List<String> missing = new java.util.ArrayList<>();
    for (int i = 0; i < files.length; i++) {
      if (files[i] == null) {
        missing.add(names[i]);
      }
    }
    if (missing.size() == files.length) {
      if (clientAuth != null) {
        throw bad("--client-auth needs TLS: give --tls-cert, --tls-key and --tls-ca too");
      }
      return null;
    }
    if (!missing.isEmpty()) {
      throw bad("--tls-cert, --tls-key and --tls-ca go together (all three for TLS, none for plaintext);"
          + " missing: " + String.join(", ", missing));
    }
    for (int i = 0; i < files.length; i++) {
      if (!Files.isRegularFile(files[i]) || !Files.isReadable(files[i])) {
        throw bad(names[i] + " must be a readable file; " + files[i]
            + (Files.exists(files[i]) ? " is not one" : " does not exist"));
      }
    }
    TlsConfig.ClientAuth auth;
    if (clientAuth == null || clientAuth.equalsIgnoreCase("require")) {
      auth = TlsConfig.ClientAuth.REQUIRE;
    } else if (clientAuth.equalsIgnoreCase("optional")) {
      auth = TlsConfig.ClientAuth.OPTIONAL;
    } else {
      throw bad("--client-auth must be require or optional; was '" + clientAuth + "'");
    }
    return TlsConfig.of(tlsCert, tlsKey, tlsCa).withClientAuth(auth);
  }

  /**
   * {@return the warning a node without TLS prints when others can reach it; empty on loopback
   *     or with TLS}
   */
  static java.util.Optional<String> plaintextWarning(NodeConfig config) {
    if (config.tls() != null) {
      return java.util.Optional.empty();
    }
    Peer self = config.selfPeer();
    InetAddress address = self.clientAddress().getAddress();
    if (address != null && address.isLoopbackAddress()) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(
        "WARNING: node " + self.id() + " listens on " + self.host() + " WITHOUT TLS: it is unauthenticated."
            + " Anyone who can reach ports " + self.clientPort() + " and " + self.raftPort() + " can read and"
            + " delete every lease and key, end others' sessions, and join the Raft traffic. Give every node"
            + " --tls-cert, --tls-key and --tls-ca (docs/security.md).");
  }

  /**
   * Two nodes on one host whose ports meet (the same PORT, or one's client port on the other's
   * Raft port, PORT + 1) cannot both run; the node that loses logs a trace and runs for ever.
   */
  private void checkDistinctPorts(List<Peer> cluster) {
    for (int i = 0; i < cluster.size(); i++) {
      for (int j = i + 1; j < cluster.size(); j++) {
        Peer a = cluster.get(i);
        Peer b = cluster.get(j);
        if (a.host().equalsIgnoreCase(b.host()) && Math.abs(a.clientPort() - b.clientPort()) <= 1) {
          throw bad("--peers is not valid: nodes " + a.id() + " (" + a.host() + ":" + a.clientPort()
              + ") and " + b.id() + " (" + b.host() + ":" + b.clientPort() + ") share a port: each"
              + " node uses PORT for clients and PORT + 1 for Raft, so nodes on one host need ports"
              + " at least 2 apart (was '" + peers + "')");
        }
      }
    }
  }

  @Override
  public Integer call() {
    NodeConfig config = config();
    CoreNode.Restore restoring = restore();
    PrintWriter err = spec.commandLine().getErr();
    Peer self = config.selfPeer();
    // Before the node starts: Ratis ends the JVM (after ~20 s, with a trace) on a taken Raft port.
    // Both ports on the node's own host, where the node binds them: the same port on another
    // address of this machine (the fault harness's links) is no conflict.
    InetAddress host = self.clientAddress().getAddress();
    String taken =
        Ports.inUse(host, self.clientPort())
            ? "client port " + self.clientPort()
            : Ports.inUse(host, self.raftPort()) ? "Raft port " + self.raftPort() + " (PORT + 1)" : null;
    if (taken != null) {
      throw new CommandFailure(ExitStatus.FAILURE, "node " + id + " cannot start: its " + taken
          + " is in use (another node or program on this machine?); give it other ports in --peers");
    }
    plaintextWarning(config).ifPresent(w -> {
      err.println("leasehold server: " + w);
      err.flush();
    });
    try (Foreground foreground = new Foreground()) {
      CoreNode node;
      try {
        node = restoring == null ? CoreNode.start(config) : CoreNode.startRestoring(config, restoring);
      } catch (StartRefusedException e) {
        // Not a failure to report with a trace: the node would have lost data or broken the
        // leader lease. One line, naming the flag that decides.
        err.println("leasehold server: " + e.getMessage());
        err.flush();
        return 2;
      } catch (UncheckedIOException | IllegalStateException e) {
        // The node's own message may already say "node n1 could not start": say it once, with
        // the reason (an AccessDeniedException's message is only the path).
        String why = Errors.describe(e).replace("node " + id + " could not start: ", "");
        err.println("leasehold server: node " + id + " could not start: " + why);
        err.flush();
        return 1;
      }
      StatusHttpServer http;
      try {
        http = httpPort == null ? null : StatusHttpServer.start(new InetSocketAddress(self.host(), httpPort), () -> List.of(node));
      } catch (UncheckedIOException e) {
        node.close();
        err.println("leasehold server: --http-port: " + e.getMessage());
        err.flush();
        return 1;
      }
      try (node; http) {
        err.println(
            "leasehold server: node "
                + id
                + " of "
                + config.peers().size()
                + " runs: clients on "
                + self.clientEndpoint()
                + ", Raft on port "
                + self.raftPort()
                + ", data in "
                + config.dataDir().toAbsolutePath()
                + (config.tls() == null
                    ? ", plaintext"
                    : ", TLS (client certificates " + config.tls().clientAuth().name().toLowerCase(java.util.Locale.ROOT) + ")")
                + (http == null ? "" : ", status on http://" + self.host() + ":" + http.port() + "/")
                + ". Ctrl-C or SIGTERM stops it.");
        err.flush();
        node.stoppedOnItsOwn().thenRun(foreground::wake);
        foreground.await(null);
        String stoppedBy = node.stoppedOnItsOwn().getNow(null);
        if (stoppedBy != null) {
          err.println("leasehold server: node " + id + " stops: " + stoppedBy);
          err.flush();
          return 1;
        }
        err.println("leasehold server: stopping node " + id);
        err.flush();
        // A planned stop: a leader hands over first, so clients need not wait for an election.
        node.handOverLeadership(HAND_OVER_LIMIT)
            .ifPresent(successor -> {
              err.println("leasehold server: node " + id + " handed the leadership to " + successor);
              err.flush();
            });
        // The calls it holds (forwarded to the new leader during the move) are answered rather
        // than cancelled: a cancelled call is sent again through another node, hundreds of ms later.
        if (!node.awaitCallsAnswered(CALLS_ANSWERED_LIMIT)) {
          err.println("leasehold server: node " + id + ": calls still unanswered after "
              + CALLS_ANSWERED_LIMIT.toMillis() + " ms; cancelling them (their clients send them again through"
              + " another node)");
          err.flush();
        }
      }
    }
    return 0;
  }

  /** {@return the checked backup to restore, or null}; refuses a bad file before anything starts */
  private CoreNode.Restore restore() {
    if (restore == null) {
      return null;
    }
    if (!bootstrap) {
      throw bad("--restore seeds a new node: it needs --bootstrap (and an empty --data-dir)");
    }
    if (bumpRevision < 0 || bumpRevision > MAX_BUMP_REVISION) {
      throw bad("--bump-revision must be 0 to " + MAX_BUMP_REVISION + "; was " + bumpRevision);
    }
    try {
      return new CoreNode.Restore(Backup.readFrom(restore), bumpRevision);
    } catch (java.io.IOException e) {
      throw bad("--restore: " + (e instanceof java.nio.file.NoSuchFileException ? restore + " does not exist" : e.getMessage()));
    }
  }

  private ParameterException bad(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
