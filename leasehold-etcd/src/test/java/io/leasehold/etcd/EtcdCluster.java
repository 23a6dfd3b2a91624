package io.leasehold.etcd;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * Real etcd members on free loopback ports, each a child process of the Debian {@code etcd}
 * binary with a fresh data directory under {@code target/etcd/}. {@code --heartbeat-interval=10
 * --election-timeout=100} make a member healthy in a few hundred milliseconds. Where the binary is
 * missing, starting fails with the install hint: the tests never skip.
 */
final class EtcdCluster implements AutoCloseable {

  static final String INSTALL_HINT =
      "the etcd binary was not found (looked on PATH and in /usr/bin): install the Debian package"
          + " with 'sudo apt-get install -y etcd-server' (./run-tests does this when it can)";

  private static final Duration STARTUP = Duration.ofSeconds(30);

  private final Path dir;
  private final List<Member> members;

  private EtcdCluster(Path dir, List<Member> members) {
    this.dir = dir;
    this.members = members;
  }

  /**
   * Starts {@code size} members as one new cluster and waits until every one is healthy. A free
   * port is found by binding port 0 and closing it, so another process (the other test JVM of
   * this module, or any outgoing connection) may take it before etcd binds it; a member that
   * exits while starting makes the whole cluster start again on new ports, up to three times.
   */
  static EtcdCluster start(int size) {
    return start(size, null);
  }

  /**
   * The files of an etcd that serves its clients over TLS and requires client certificates
   * ({@code --client-cert-auth}) from the authorities in {@code ca}.
   *
   * @param ca the authorities clients' certificates must come from ({@code --trusted-ca-file})
   * @param cert the member's certificate ({@code --cert-file})
   * @param key its key ({@code --key-file})
   */
  record ServerTls(Path ca, Path cert, Path key) {}

  /**
   * Starts {@code size} members as {@link #start(int)} does; with {@code tls}, their client port
   * speaks TLS only and requires a client certificate, and /health is read on a plaintext metrics
   * port.
   */
  static EtcdCluster start(int size, ServerTls tls) {
    for (int attempt = 1; ; attempt++) {
      try {
        return startOnce(size, tls);
      } catch (org.awaitility.core.TerminalFailureException exited) {
        if (attempt == 3) {
          throw exited;
        }
      }
    }
  }

  private static EtcdCluster startOnce(int size, ServerTls tls) {
    String binary = binary();
    Path dir = Path.of("target", "etcd", UUID.randomUUID().toString().substring(0, 8)).toAbsolutePath();
    List<Member> members = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      members.add(new Member("m" + i, freePort(), freePort(), tls == null ? 0 : freePort(), dir.resolve("m" + i), tls));
    }
    String initialCluster =
        members.stream().map(m -> m.name + "=" + m.peerUrl()).collect(Collectors.joining(","));
    EtcdCluster cluster = new EtcdCluster(dir, members);
    try {
      Files.createDirectories(dir);
      for (Member m : members) {
        m.start(binary, initialCluster, "leasehold-" + dir.getFileName());
      }
      for (Member m : members) {
        cluster.awaitHealthy(m);
      }
      return cluster;
    } catch (IOException e) {
      cluster.close();
      throw new UncheckedIOException("cannot start etcd in " + dir, e);
    } catch (RuntimeException | Error e) {
      cluster.close();
      throw e;
    }
  }

  private static String binary() {
    List<Path> candidates = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      for (String d : path.split(File.pathSeparator)) {
        candidates.add(Path.of(d, "etcd"));
      }
    }
    candidates.add(Path.of("/usr/bin/etcd"));
    return candidates.stream()
        .filter(Files::isExecutable)
        .findFirst()
        .map(Path::toString)
        .orElseThrow(() -> new AssertionError(INSTALL_HINT));
  }

  int size() {
    return members.size();
  }

  /** {@return the client address of member {@code i}} */
  InetSocketAddress clientAddress(int i) {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), members.get(i).clientPort);
  }

  /** {@return the http endpoint of member {@code i}, as jetcd takes it} */
  String endpoint(int i) {
    return "http://127.0.0.1:" + members.get(i).clientPort;
  }

  /** {@return a backend URI naming every member that is still running} */
  String backendUri() {
    return "etcd://"
        + members.stream()
            .filter(m -> m.process != null && m.process.isAlive())
            .map(m -> "127.0.0.1:" + m.clientPort)
            .collect(Collectors.joining(","));
  }

  /** {@return whether member {@code i} runs} */
  boolean isRunning(int i) {
    Process p = members.get(i).process;
    return p != null && p.isAlive();
  }

  /** Kills member {@code i} with {@code SIGKILL}, as a machine failure would, and waits for it. */
  void kill(int i) {
    members.get(i).stop();
  }

  private void awaitHealthy(Member m) {
    Awaitility.await("etcd member " + m.name + " on port " + m.clientPort + " to be healthy")
        .atMost(STARTUP)
        .pollInterval(Duration.ofMillis(50))
        .failFast(
            "etcd member " + m.name + " exited; see " + m.log,
            () -> !m.process.isAlive())
        .until(() -> healthy(m.tls == null ? m.clientPort : m.metricsPort));
  }

  /** {@return whether the member on {@code clientPort} answers /health with true} */
  static boolean healthy(int clientPort) {
    // Plain HTTP/1.0 on a socket: the module under test reads no java.net.http.
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), clientPort), 1000);
      s.setSoTimeout(1000);
      s.getOutputStream()
          .write("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      return reply.startsWith("HTTP/1.") && reply.contains(" 200 ") && reply.contains("\"true\"");
    } catch (IOException e) {
      return false;
    }
  }

  @Override
  public void close() {
    for (Member m : members) {
      m.stop();
    }
    deleteRecursively(dir);
  }

  private static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // target/ is cleaned by the next build anyway
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    }
  }

  private static final class Member {
    final String name;
    final int clientPort;
    final int peerPort;
    final int metricsPort;
    final Path dataDir;
    final Path log;
    final ServerTls tls;
    Process process;

    Member(String name, int clientPort, int peerPort, int metricsPort, Path dataDir, ServerTls tls) {
      this.name = name;
      this.clientPort = clientPort;
      this.peerPort = peerPort;
      this.metricsPort = metricsPort;
      this.tls = tls;
      this.dataDir = dataDir;
      this.log = dataDir.resolveSibling(name + ".log");
    }

    String peerUrl() {
      return "http://127.0.0.1:" + peerPort;
    }

    void start(String binary, String initialCluster, String token) throws IOException {
      String clientUrl = (tls == null ? "http" : "https") + "://127.0.0.1:" + clientPort;
      List<String> command = new ArrayList<>(List.of(
                  binary,
                  "--name=" + name,
                  "--data-dir=" + dataDir,
                  "--listen-client-urls=" + clientUrl,
                  "--advertise-client-urls=" + clientUrl,
                  "--listen-peer-urls=" + peerUrl(),
                  "--initial-advertise-peer-urls=" + peerUrl(),
                  "--initial-cluster=" + initialCluster,
                  "--initial-cluster-state=new",
                  "--initial-cluster-token=" + token,
                  "--heartbeat-interval=10",
                  "--election-timeout=100",
                  "--logger=zap",
                  "--log-level=warn"));
      if (tls != null) {
        command.addAll(List.of(
            "--cert-file=" + tls.cert(),
            "--key-file=" + tls.key(),
            "--trusted-ca-file=" + tls.ca(),
            "--client-cert-auth",
            "--listen-metrics-urls=http://127.0.0.1:" + metricsPort));
      }
      process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
    }

    void stop() {
      Process p = process;
      if (p == null) {
        return;
      }
      p.destroyForcibly();
      try {
        p.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
