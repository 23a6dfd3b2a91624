package io.leasehold.cli;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.Certificates;
import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.StartRefusedException;
import io.leasehold.server.TlsConfig;
import io.leasehold.server.http.StatusHttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;
import java.util.stream.IntStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold dev}: a local cluster of the consistent core on loopback, to develop against.
 * Prints its URI, proves it grants and hands over a lease, and runs until Ctrl-C (or {@code
 * --duration}).
 */
@Command(
    name = "dev",
    mixinStandardHelpOptions = true,
    header = "Runs a local Leasehold cluster (the consistent core) to develop against.",
    description = {
      "Starts a cluster of the consistent core in this process, its nodes on loopback, prints its"
          + " leasehold:// URI on a line of its own, checks that it grants, refuses and hands over a"
          + " lease, and runs until Ctrl-C.",
      "With the defaults its URI is%n  " + Backends.DEV_URI + "%nthe default backend of the"
          + " other commands, so `leasehold status` in a second terminal needs no flags.",
      "Data: without --dir, a fresh directory under the system temp directory, deleted when the"
          + " cluster stops; with --dir, kept, and a later run with the same --dir, --nodes and"
          + " --port starts the same cluster again on its data.",
      "A kept cluster one of whose node directories was deleted is refused, not started empty:"
          + " its fencing tokens could go back.",
      "With --tls: makes a throwaway certificate authority, a certificate for the nodes (127.0.0.1,"
          + " localhost) and one for clients in the data directory's tls/ (new on every run), serves"
          + " with mutual TLS on every port, and prints the leaseholds:// URI that names the files a"
          + " client needs.",
      "Exits 0 when stopped, 1 if the cluster cannot start or fails the check, 2 for bad options"
          + " and a kept cluster that lost a node's data."
    })
final class DevCommand implements Callable<Integer> {

  static final int MAX_NODES = 9;
  static final Duration MIN_DURATION = Duration.ofSeconds(1);
  static final Duration MAX_DURATION = Duration.ofDays(1);

  /** The lease the start-up check acquires and releases. */
  static final String CHECK_LEASE = "leasehold-dev-check";

  /** Written into a kept data directory: which cluster it holds. */
  static final String MARKER = "leasehold-dev.properties";

  private static final Duration CHECK_TIMEOUT = Duration.ofSeconds(15);

  @Spec private CommandSpec spec;

  @Option(
      names = "--nodes",
      paramLabel = "N",
      defaultValue = "" + Backends.DEV_NODES,
      description = "Nodes in the cluster, 1 to 9 (default: ${DEFAULT-VALUE}); 3 survives one failure.")
  private int nodes;

  @Option(
      names = "--port",
      paramLabel = "PORT",
      defaultValue = "" + Backends.DEV_PORT,
      description = {
        "Client port of the first node (default: ${DEFAULT-VALUE}); node i listens on PORT + 2i"
            + " for clients and on the port after for Raft. 0 picks free ports (the URI then"
            + " differs from run to run)."
      })
  private int port;

  @Option(
      names = "--dir",
      paramLabel = "DIR",
      description = "Keep the nodes' data in DIR (one directory per node), and start the cluster"
          + " again from it next time (default: a fresh temporary directory, deleted on exit).")
  private Path dir;

  @Option(
      names = "--duration",
      paramLabel = "DURATION",
      description = "Stop by itself this long after starting (the start-up check still runs in"
          + " full), 1s to 24h (default: run until Ctrl-C).")
  private Duration duration;

  @Option(
      names = "--http-port",
      paramLabel = "PORT",
      defaultValue = "0",
      description = "Serve /metrics, /healthz, /readyz and a status page (/) of the nodes over HTTP"
          + " on loopback port PORT, 0 to 65535 (default: 0, a free port; printed).")
  private int httpPort;

  @Option(
      names = "--tls",
      description = "Serve with mutual TLS, from certificates made for this run in the data directory's tls/"
          + " (see above and docs/security.md).")
  private boolean tls;

  @Override
  public Integer call() {
    checkOptions();
    checkPorts(); // before the temporary directory exists: nothing to clean up
    boolean temporary = dir == null;
    // A directory with the marker holds a cluster an earlier run made: its nodes recover their
    // data. Anything else is a new cluster, whose nodes format their (new) directories.
    boolean kept = !temporary && Files.isRegularFile(dir.resolve(MARKER));
    Path root = temporary ? createTempDir() : prepareDir(dir);
    // Everything, the deletion of a temporary directory included, happens before the Foreground
    // closes: on Ctrl-C the JVM halts as soon as its shutdown hook returns.
    try (Foreground foreground = new Foreground()) {
      try {
        return run(root, temporary, kept, foreground);
      } finally {
        if (temporary) {
          deleteQuietly(root, spec.commandLine().getErr());
        }
      }
    }
  }

  private int run(Path root, boolean temporary, boolean kept, Foreground foreground) {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    out.printf(
        "leasehold dev: starting %d node%s of the consistent core on loopback; data in %s%s%n",
        nodes,
        nodes == 1 ? "" : "s",
        root.toAbsolutePath(),
        temporary ? " (deleted when it stops; --dir DIR keeps it)" : "");
    out.flush();
    if (!temporary && port != 0) {
      writeMarker(root, Backends.devUri(nodes, port)); // before the nodes write anything there
    }
    long start = System.nanoTime();
    // Without --tls the nodes' configuration is untouched (plaintext, as always).
    Certificates.DevFiles files = tls ? makeCertificates(root, out) : null;
    UnaryOperator<NodeConfig> tuning =
        files == null
            ? UnaryOperator.identity()
            : c -> c.withTls(TlsConfig.of(files.nodeCert(), files.nodeKey(), files.ca()));
    LocalCluster cluster;
    try {
      cluster =
          kept
              ? LocalCluster.recover(nodes, port, root, tuning)
              : LocalCluster.start(nodes, port, root, tuning);
    } catch (StartRefusedException e) {
      // A node of a kept cluster lost its directory: starting it empty could hand out fencing
      // tokens again, so the cluster does not start. One line, no trace.
      err.println(
          kept
              ? "leasehold dev: the cluster kept in " + root.toAbsolutePath() + " could not start: "
                  + e.getMessage() + ". (leasehold dev formats only a new --dir; to start afresh, give"
                  + " another --dir or delete this one)"
              : "leasehold dev: the cluster could not start: " + e.getMessage());
      err.flush();
      return 2;
    } catch (UncheckedIOException | IllegalStateException e) {
      err.println("leasehold dev: the cluster could not start: " + Errors.describe(e) + portHint(e));
      err.flush();
      return 1;
    }
    StatusHttpServer http;
    try {
      http = StatusHttpServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), httpPort), () -> running(cluster));
    } catch (UncheckedIOException e) {
      cluster.close();
      err.println("leasehold dev: --http-port: " + e.getMessage());
      err.flush();
      return 1;
    }
    try (cluster; http) {
      if (!temporary && port == 0) {
        writeMarker(root, cluster.uri());
      }
      String leader = cluster.leader().map(i -> cluster.peers().get(i).id()).orElse("none yet");
      String uri = files == null ? cluster.uri() : secureUri(cluster.uri(), files);
      out.printf(
          "leasehold dev: the cluster serves%s after %s (leader %s). Its URI:%n",
          files == null ? "" : " with mutual TLS",
          Durations.seconds(Duration.ofNanos(System.nanoTime() - start)),
          leader);
      out.println(uri);
      if (files != null) {
        out.println("leasehold dev: a client needs the CA " + files.ca().toAbsolutePath() + ", and the certificate "
            + files.clientCert().toAbsolutePath() + " with its key " + files.clientKey().toAbsolutePath()
            + " (all named in the URI; new on every run)");
      }
      out.println("leasehold dev: status page on http://" + InetAddress.getLoopbackAddress().getHostAddress() + ":"
          + http.port() + "/ (also /metrics, /healthz, /readyz)");
      out.flush();
      if (!check(uri, out)) {
        err.println("leasehold dev: the cluster failed its check (see above); stopping it");
        err.flush();
        return 1;
      }
      printHint(uri, files, out);
      // --duration counts from the start, so a short run (CI) takes about as long as it says.
      Duration left =
          duration == null ? null : duration.minusNanos(System.nanoTime() - start);
      Foreground.Reason reason = foreground.await(left == null || !left.isNegative() ? left : Duration.ZERO);
      out.println(
          "leasehold dev: stopping ("
              + switch (reason) {
                case DURATION -> "ran for " + Durations.format(duration);
                case SIGNAL -> "signal";
                case INTERRUPT -> "interrupted";
              }
              + ")");
      out.flush();
    }
    out.println(
        "leasehold dev: stopped"
            + (temporary ? "; deleting " : "; data kept in ")
            + root.toAbsolutePath());
    out.flush();
    return 0;
  }

  /** A new authority and certificates in {@code root/tls}: throwaway, made again on every run. */
  private static Certificates.DevFiles makeCertificates(Path root, PrintWriter out) {
    Path tlsDir = root.resolve("tls");
    Certificates.DevFiles files = Certificates.makeDevFiles(tlsDir, List.of(Backends.DEV_HOST, "localhost"));
    out.println("leasehold dev: made a throwaway CA and certificates in " + tlsDir.toAbsolutePath());
    out.flush();
    return files;
  }

  /** {@return the leaseholds:// URI of the cluster, naming the client's files} */
  static String secureUri(String plainUri, Certificates.DevFiles files) {
    return "leaseholds://" + plainUri.substring("leasehold://".length())
        + "?ca=" + escape(files.ca())
        + "&cert=" + escape(files.clientCert())
        + "&key=" + escape(files.clientKey());
  }

  /** A file name as a URI parameter: the characters the URI's syntax uses, %-escaped. */
  private static String escape(Path file) {
    return file.toAbsolutePath().toString()
        .replace("%", "%25").replace("&", "%26").replace(" ", "%20").replace("?", "%3F").replace("#", "%23");
  }

  private List<CoreNode> running(LocalCluster cluster) {
    return IntStream.range(0, nodes).mapToObj(cluster::node).flatMap(Optional::stream).toList();
  }

  private void checkOptions() {
    if (httpPort < 0 || httpPort > 65535) {
      throw bad("--http-port must be between 0 and 65535; was " + httpPort);
    }
    if (nodes < 1 || nodes > MAX_NODES) {
      throw bad("--nodes must be between 1 and " + MAX_NODES + "; was " + nodes);
    }
    // Node i uses PORT + 2i and PORT + 2i + 1; the last must be a valid port.
    int maxPort = 65535 - (2 * nodes - 1);
    if (port != 0 && (port < 1 || port > maxPort)) {
      throw bad(
          "--port must be 0 (free ports) or between 1 and " + maxPort + " with " + nodes + " nodes; was " + port);
    }
    if (duration != null
        && (duration.compareTo(MIN_DURATION) < 0 || duration.compareTo(MAX_DURATION) > 0)) {
      throw bad(
          "--duration must be between "
              + Durations.format(MIN_DURATION)
              + " and "
              + Durations.format(MAX_DURATION)
              + "; was "
              + Durations.format(duration));
    }
  }

  /** Node i listens on PORT + 2i (clients, loopback) and PORT + 2i + 1 (Raft, every address). */
  private void checkPorts() {
    if (port == 0) {
      return;
    }
    for (int i = 0; i < nodes; i++) {
      int client = port + 2 * i;
      String taken =
          Ports.inUse(InetAddress.getLoopbackAddress(), client)
              ? "port " + client + " (node n" + (i + 1) + "'s client port)"
              : Ports.inUse(null, client + 1)
                  ? "port " + (client + 1) + " (node n" + (i + 1) + "'s Raft port)"
                  : null;
      if (taken != null) {
        throw new CommandFailure(
            ExitStatus.FAILURE,
            taken + " is in use: is another `leasehold dev` running? Stop it, or give this one"
                + " other ports with --port (--port 0 picks free ones)");
      }
    }
  }

  /**
   * Checks that {@code --dir} is new, empty, or holds this very cluster (same URI), so that a kept
   * cluster starts again on its own data and nothing else is written into.
   */
  private Path prepareDir(Path dir) {
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw bad("--dir must be a directory; " + dir + " is a file");
    }
    Path marker = dir.resolve(MARKER);
    if (Files.isRegularFile(marker)) {
      String kept = readMarker(marker);
      if (port == 0) {
        throw bad(
            "--dir " + dir + " holds the data of the cluster " + kept + "; --port 0 would start it on"
                + " other ports. Give the --nodes and --port it was made with, or another --dir");
      }
      String wanted = Backends.devUri(nodes, port);
      if (!wanted.equals(kept)) {
        throw bad(
            "--dir " + dir + " holds the data of the cluster " + kept + ", not of " + wanted
                + "; give the --nodes and --port it was made with, or another --dir");
      }
    } else if (Files.isDirectory(dir) && !isEmpty(dir)) {
      throw bad("--dir must be new, empty, or a directory an earlier `leasehold dev --dir` made; "
          + dir + " holds other files");
    }
    try {
      Path created = Files.createDirectories(dir);
      if (!Files.isWritable(created)) {
        throw bad("--dir " + dir + " is not writable");
      }
      return created;
    } catch (IOException e) {
      // Under a regular file, under /proc, without permission: the flag and the reason, exit 2.
      throw bad("--dir " + dir + " cannot be created: " + Errors.describe(e));
    }
  }

  /** Two clients contend for one lease: proof that the cluster grants, refuses and hands over. */
  private static boolean check(String uri, PrintWriter out) {
    try (LeaseBackend first = LeaseBackend.open(uri);
        LeaseBackend second = LeaseBackend.open(uri);
        Lease a = first.newLease(checkSettings("dev-check-a", 2));
        Lease b = second.newLease(checkSettings("dev-check-b", 0))) {
      if (!await(a.acquire())) {
        return failed(out, "dev-check-a could not acquire '" + CHECK_LEASE + "', which nobody held");
      }
      long tokenA = a.fencingToken().orElseThrow();
      out.printf("check: dev-check-a acquired '%s' (fencing token %d)%n", CHECK_LEASE, tokenA);
      if (await(b.acquire())) {
        return failed(out, "dev-check-b acquired '" + CHECK_LEASE + "' while dev-check-a held it");
      }
      out.println("check: dev-check-b was refused while dev-check-a holds it");
      await(a.release());
      out.println("check: dev-check-a released it");
      if (!await(b.acquire())) {
        return failed(out, "dev-check-b could not acquire '" + CHECK_LEASE + "' after its release");
      }
      long tokenB = b.fencingToken().orElseThrow();
      if (tokenB <= tokenA) {
        return failed(out, "the new tenure's token " + tokenB + " is not greater than " + tokenA);
      }
      out.printf("check: dev-check-b acquired it (fencing token %d, greater than %d)%n", tokenB, tokenA);
      await(b.release());
      out.println("check: dev-check-b released it. The core works.");
      out.flush();
      return true;
    } catch (ExecutionException e) {
      return failed(out, e.getCause().toString());
    } catch (TimeoutException e) {
      return failed(out, "no answer within " + Durations.format(CHECK_TIMEOUT));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failed(out, "interrupted");
    } catch (RuntimeException e) {
      return failed(out, e.toString());
    }
  }

  private static LeaseSettings checkSettings(String owner, int acquireRetries) {
    // A generous operation timeout: the first calls on a cluster that just started (a cold JVM,
    // two shared cores) can take a second or more. Retries only where "held elsewhere" is not the
    // expected answer, since a refusal is retried after the retry interval.
    return LeaseSettings.builder(CHECK_LEASE, owner)
        .ttl(Duration.ofSeconds(15))
        .operationTimeout(Duration.ofSeconds(4))
        .acquireRetries(acquireRetries)
        .build();
  }

  private static <T> T await(java.util.concurrent.CompletableFuture<T> f)
      throws InterruptedException, ExecutionException, TimeoutException {
    return f.get(CHECK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static boolean failed(PrintWriter out, String what) {
    out.println("check FAILED: " + what);
    out.flush();
    return false;
  }

  /** {@return {@code s} as one word for a POSIX shell, in single quotes unless it needs none} */
  static String shellQuoted(String s) {
    return s.matches("[A-Za-z0-9@%+=:,./_-]+") ? s : "'" + s.replace("'", "'\\''") + "'";
  }

  private void printHint(String uri, Certificates.DevFiles files, PrintWriter out) {
    // Quoted for a shell: a leaseholds:// URI's & would end the command there.
    String status =
        uri.equals(Backends.defaultUri()) ? "./leasehold status" : "./leasehold status --backend " + shellQuoted(uri);
    out.println();
    out.println("Try this in another terminal:");
    out.println("  " + status);
    if (files != null || !uri.equals(Backends.defaultUri())) {
      out.println("or, for every command of that terminal: export " + Backends.ENV + "=" + shellQuoted(uri));
    }
    out.println("Programs open it with LeaseBackend.open(\"" + uri + "\") (module leasehold-client).");
    out.println(
        duration == null
            ? "Ctrl-C stops the cluster."
            : "The cluster stops after " + Durations.format(duration) + " (--duration), or on Ctrl-C.");
    out.println();
    out.flush();
  }

  private String portHint(RuntimeException e) {
    return port != 0 && String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT).contains("bind")
        ? " (is another `leasehold dev` running? --port picks other ports)"
        : "";
  }

  private static Path createTempDir() {
    try {
      return Files.createTempDirectory("leasehold-dev-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a temporary directory: " + e.getMessage(), e);
    }
  }

  private boolean isEmpty(Path dir) {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      return !entries.iterator().hasNext();
    } catch (IOException e) {
      throw bad("--dir " + dir + " cannot be read: " + Errors.describe(e));
    }
  }

  private static String readMarker(Path marker) {
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(marker)) {
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + marker + ": " + e.getMessage(), e);
    }
    return p.getProperty("uri", "(unknown)");
  }

  private static void writeMarker(Path root, String uri) {
    Properties p = new Properties();
    p.setProperty("uri", uri);
    try (OutputStream o = Files.newOutputStream(root.resolve(MARKER))) {
      p.store(o, "The cluster `leasehold dev --dir` keeps here; it starts again with the same --nodes and --port");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + root.resolve(MARKER) + ": " + e.getMessage(), e);
    }
  }

  private static void deleteQuietly(Path root, PrintWriter err) {
    try {
      Files.walkFileTree(
          root,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
              Files.delete(file);
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
              Files.delete(d);
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      err.println("leasehold dev: could not delete " + root + ": " + e);
      err.flush();
    }
  }

  private ParameterException bad(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
