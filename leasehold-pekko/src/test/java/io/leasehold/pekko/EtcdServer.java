package io.leasehold.pekko;

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
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/**
 * One real etcd member (the Debian {@code etcd-server} binary, {@code /usr/bin/etcd}) on free
 * loopback ports, with a fresh data directory under {@code target/}; fast Raft timings so it is
 * healthy within a second. Without the binary, starting fails with the install hint.
 */
final class EtcdServer implements AutoCloseable {

  private final Process process;
  private final int clientPort;
  private final Path log;

  private EtcdServer(Process process, int clientPort, Path log) {
    this.process = process;
    this.clientPort = clientPort;
    this.log = log;
  }

  static EtcdServer start() {
    Path binary = Path.of("/usr/bin/etcd");
    if (!Files.isExecutable(binary)) {
      throw new AssertionError(
          "etcd was not found at /usr/bin/etcd: install it with 'sudo apt-get install -y"
              + " etcd-server' (./run-tests does this when it can)");
    }
    try {
      Path dir = Files.createTempDirectory(Path.of("target"), "etcd-").toAbsolutePath();
      int client = freePort();
      int peer = freePort();
      String clientUrl = "http://127.0.0.1:" + client;
      String peerUrl = "http://127.0.0.1:" + peer;
      Path log = dir.resolve("etcd.log");
      Process p =
          new ProcessBuilder(
                  binary.toString(),
                  "--name=pekko",
                  "--data-dir=" + dir.resolve("data"),
                  "--listen-client-urls=" + clientUrl,
                  "--advertise-client-urls=" + clientUrl,
                  "--listen-peer-urls=" + peerUrl,
                  "--initial-advertise-peer-urls=" + peerUrl,
                  "--initial-cluster=pekko=" + peerUrl,
                  "--heartbeat-interval=10",
                  "--election-timeout=100",
                  "--log-level=warn")
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      EtcdServer server = new EtcdServer(p, client, log);
      Awaitility.await("etcd on port " + client + " healthy")
          .atMost(Duration.ofSeconds(30))
          .pollInterval(Duration.ofMillis(50))
          .failFast("etcd exited; see " + log, () -> !p.isAlive())
          .until(server::healthy);
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start etcd", e);
    }
  }

  InetSocketAddress clientAddress() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), clientPort);
  }

  String uri() {
    return "etcd://127.0.0.1:" + clientPort;
  }

  /** Asks /health over plain HTTP/1.0. */
  private boolean healthy() {
    try (Socket s = new Socket()) {
      s.connect(clientAddress(), 1000);
      s.setSoTimeout(1000);
      s.getOutputStream()
          .write("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      return reply.contains(" 200 ") && reply.contains("\"true\"");
    } catch (IOException e) {
      return false;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "etcd on " + clientPort + " (log " + log + ")";
  }
}
