package io.leasehold.server.http;

import io.leasehold.server.CoreNode;
import io.leasehold.server.NodeSnapshot;

import io.leasehold.server.replicated.TenureChange;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An operator's HTTP endpoints for the core nodes running in this process, on the JDK's own HTTP
 * server (no dependency):
 *
 * <ul>
 *   <li>{@code /metrics}: Prometheus text format (version 0.0.4), one sample per node, labelled
 *       {@code node="n1"};
 *   <li>{@code /healthz}: 200 while the process is up;
 *   <li>{@code /readyz}: 200 when every node here is ready (a member that knows a leader and is
 *       caught up, see {@link #notReady(NodeSnapshot)}), else 503 with the reason;
 *   <li>{@code /status.json}: what the status page shows;
 *   <li>{@code /}: the status page, one self-contained HTML file that polls {@code /status.json}.
 * </ul>
 *
 * <p>{@code leasehold server} serves its one node; {@code leasehold dev} serves its three. Every
 * answer is read from each node's own replica and Raft division, never through the leader, so
 * the endpoints answer while there is no leader (that is when they matter).
 */
public final class StatusHttpServer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(StatusHttpServer.class);

  /**
   * A node is caught up when it has applied all but at most this many entries of the highest
   * commit index it knows of (a busy follower is a few entries behind at any moment).
   */
  public static final long MAX_READY_LAG = 100;

  /**
   * Held leases {@code /status.json} lists (the first, in name order; {@code leasesHeld} counts
   * all): the list is copied under the state's lock and sent whole, so it is bounded.
   */
  static final int STATUS_LEASES = 1000;

  /** Threads answering requests: a request is read on one, so a few slow clients hold a few. */
  static final int THREADS = 4;

  /** Seconds a client may take to send its request, and to read the answer, before it is cut off. */
  static final int CLIENT_SECONDS = 5;

  /**
   * Bounds how long one client may hold a thread. The JDK's HTTP server reads a request on the
   * thread that answers it and waits for a slow client without a limit unless these are set, so
   * four clients that never finish their request hung {@code /healthz} (a liveness probe) for
   * good. They are JVM-wide settings read once, when the first JDK HTTP server of the process is
   * made (set here unless the process already sets them with {@code -D}); a program that made one
   * before it started a node keeps what it had.
   */
  private static void boundClients() {
    String seconds = Integer.toString(CLIENT_SECONDS);
    for (String property : List.of("sun.net.httpserver.maxReqTime", "sun.net.httpserver.maxRspTime")) {
      if (System.getProperty(property) == null) {
        System.setProperty(property, seconds);
      }
    }
  }

  private final HttpServer server;
  private final ExecutorService executor;
  private final Supplier<List<CoreNode>> nodes;
  private final byte[] page;

  private StatusHttpServer(HttpServer server, ExecutorService executor, Supplier<List<CoreNode>> nodes) {
    this.server = server;
    this.executor = executor;
    this.nodes = nodes;
    this.page = resource("status.html");
  }

  /**
   * Starts serving.
   *
   * @param address where to listen; port 0 picks a free one
   * @param nodes the nodes running in this process now (called on every request)
   * @return the running server; {@link #port()} tells the port
   * @throws UncheckedIOException if the address cannot be bound
   */
  public static StatusHttpServer start(InetSocketAddress address, Supplier<List<CoreNode>> nodes) {
    boundClients();
    HttpServer server;
    try {
      server = HttpServer.create(address, 16);
    } catch (IOException e) {
      throw new UncheckedIOException("could not serve HTTP on " + address + ": " + e.getMessage(), e);
    }
    ExecutorService executor =
        Executors.newFixedThreadPool(
            THREADS,
            r -> {
              Thread t = new Thread(r, "leasehold-http");
              t.setDaemon(true);
              return t;
            });
    server.setExecutor(executor);
    StatusHttpServer s = new StatusHttpServer(server, executor, nodes);
    server.createContext("/", s::handle);
    server.start();
    return s;
  }

  /** {@return the port it listens on} */
  public int port() {
    return server.getAddress().getPort();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      if (!exchange.getRequestMethod().equals("GET") && !exchange.getRequestMethod().equals("HEAD")) {
        send(exchange, 405, "text/plain; charset=utf-8", "only GET\n");
        return;
      }
      String path = exchange.getRequestURI().getPath();
      switch (path) {
        case "/", "/index.html" -> send(exchange, 200, "text/html; charset=utf-8", page);
        case "/healthz" -> send(exchange, 200, "text/plain; charset=utf-8", "ok\n");
        case "/readyz" -> {
          String problem = notReady(snapshots());
          send(exchange, problem == null ? 200 : 503, "text/plain; charset=utf-8", problem == null ? "ready\n" : problem + "\n");
        }
        case "/metrics" -> send(exchange, 200, PrometheusText.CONTENT_TYPE, PrometheusText.render(snapshots()));
        case "/status.json" -> {
          List<CoreNode> running = nodes.get();
          List<NodeSnapshot> snaps = running.stream().map(n -> n.snapshot(STATUS_LEASES)).toList();
          List<TenureChange> events = new ArrayList<>();
          running.forEach(n -> events.addAll(n.recentTenureChanges(50)));
          send(exchange, 200, "application/json", StatusJson.render(snaps, mergeEvents(events), notReady(snaps)));
        }
        default -> send(exchange, 404, "text/plain; charset=utf-8", "not found: " + path + "\n");
      }
    } catch (RuntimeException e) {
      log.warn("HTTP {} failed", exchange.getRequestURI(), e);
    }
  }

  private List<NodeSnapshot> snapshots() {
    return nodes.get().stream().map(CoreNode::snapshot).toList();
  }

  /** Each node saw the same events: keep one of each revision and lease, the last 50. */
  private static List<TenureChange> mergeEvents(List<TenureChange> events) {
    List<TenureChange> unique = new ArrayList<>();
    java.util.Set<String> seen = new java.util.HashSet<>();
    events.stream()
        .sorted(Comparator.comparingLong(TenureChange::revision))
        .forEach(e -> {
          if (seen.add(e.revision() + "/" + e.type() + "/" + e.name())) {
            unique.add(e);
          }
        });
    return unique.subList(Math.max(0, unique.size() - 50), unique.size());
  }

  /**
   * Whether a node is ready to serve: a member of the group that knows a leader (itself, ready,
   * or another) and has applied all but {@link #MAX_READY_LAG} entries it knows to be committed.
   *
   * @return null when ready, else why not
   */
  static String notReady(NodeSnapshot n) {
    if (n.role().equals("UNKNOWN")) {
      return "node " + n.id() + " is not a member of the group";
    }
    if (n.leaderId().isEmpty()) {
      return "node " + n.id() + " knows no leader (role " + n.role() + ", term " + n.term() + ")";
    }
    if (n.role().equals("LEADER") && !n.leaderReady()) {
      return "node " + n.id() + " leads but has not committed an entry of its term yet";
    }
    if (n.applyLag() > MAX_READY_LAG) {
      return "node " + n.id() + " is " + n.applyLag() + " entries behind (at most " + MAX_READY_LAG + ")";
    }
    return null;
  }

  private static String notReady(List<NodeSnapshot> snaps) {
    if (snaps.isEmpty()) {
      return "no node runs in this process";
    }
    for (NodeSnapshot n : snaps) {
      String problem = notReady(n);
      if (problem != null) {
        return problem;
      }
    }
    return null;
  }

  private static void send(HttpExchange exchange, int status, String type, String body) throws IOException {
    send(exchange, status, type, body.getBytes(StandardCharsets.UTF_8));
  }

  private static void send(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : body.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }

  private static byte[] resource(String name) {
    try (InputStream in = StatusHttpServer.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + name);
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Stops serving at once. */
  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
