package io.leasehold.server.http;

import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.ReleaseRequest;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The operator's HTTP endpoints on a real 3-node core (one cluster for the class): a server per
 * node, as {@code leasehold server --http-port} runs them, and one for all three, as {@code
 * leasehold dev} does. The page is checked in a real browser (headless Chromium, Debian's {@code
 * chromium}, which {@code ./run-tests} installs when missing). The last test cuts a node off.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class StatusHttpServerTest {

  private static final Duration PATIENCE = Duration.ofSeconds(60);

  private static LocalCluster cluster;
  private static StatusHttpServer all;
  private static StatusHttpServer[] perNode;
  private static ManagedChannel channel;
  private static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private static final AtomicLong calls = new AtomicLong();

  @BeforeAll
  static void start() throws IOException {
    // The default election timeout: the test is about what the endpoints say, not failover speed.
    cluster = LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "http-"), c -> c);
    InetSocketAddress loopback = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    all = StatusHttpServer.start(loopback, () -> IntStream.range(0, 3).mapToObj(cluster::node).flatMap(Optional::stream).toList());
    perNode = new StatusHttpServer[3];
    for (int i = 0; i < 3; i++) {
      int node = i;
      perNode[i] = StatusHttpServer.start(loopback, () -> cluster.node(node).stream().toList());
    }
    Peer first = cluster.peers().get(0);
    channel = NettyChannelBuilder.forAddress(first.host(), first.clientPort()).usePlaintext().build();
  }

  @AfterAll
  static void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (all != null) {
      all.close();
      for (StatusHttpServer s : perNode) {
        s.close();
      }
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  @Order(1)
  void healthAndReadinessOfEveryNode() {
    for (StatusHttpServer s : perNode) {
      assertThat(get(s, "/healthz").statusCode()).isEqualTo(200);
      await("node ready").atMost(PATIENCE).until(() -> get(s, "/readyz").statusCode() == 200);
    }
    await("all ready").atMost(PATIENCE).until(() -> get(all, "/readyz").statusCode() == 200);
    assertThat(get(all, "/nope").statusCode()).isEqualTo(404);
    assertThat(send(all, HttpRequest.newBuilder(uri(all, "/metrics")).POST(HttpRequest.BodyPublishers.noBody())).statusCode())
        .isEqualTo(405);
    HttpResponse<String> page = get(all, "/");
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
    // Self-contained: nothing is fetched from anywhere else.
    assertThat(page.body()).doesNotContain("http://", "https://", "src=");
  }

  @Test
  @Order(2)
  void metricsParseAsPrometheusTextAndTellTheLeader() {
    int leader = cluster.leader().orElseThrow();
    Map<String, List<PrometheusTextFormat.Sample>> scrape = scrape(perNode[leader]);
    assertThat(value(scrape, "leasehold_raft_role", Map.of("role", "LEADER"))).isEqualTo(1);
    assertThat(value(scrape, "leasehold_raft_leader_ready", Map.of())).isEqualTo(1);
    assertThat(value(scrape, "leasehold_raft_term", Map.of())).isGreaterThanOrEqualTo(1);
    assertThat(scrape).containsKeys(
        "leasehold_raft_commit_index", "leasehold_raft_apply_lag", "leasehold_raft_peer_commit_lag",
        "leasehold_leaderships_total", "leasehold_sessions", "leasehold_keys", "leasehold_leases_held",
        "leasehold_lease_expiries_total", "leasehold_keepalives_total", "leasehold_client_connections", "leasehold_client_connections_total", "leasehold_client_connections_refused_total",
        "leasehold_write_seconds", "leasehold_data_bytes", "leasehold_data_bytes_limit");
    assertThat(scrape.get("leasehold_raft_peer_commit_lag")).hasSize(3);
    assertThat(value(scrape, "leasehold_data_bytes_limit", Map.of())).isEqualTo(io.leasehold.server.Limits.DEFAULT_DATA_BYTES);

    // All three nodes in one scrape (as dev serves them): one family each, one sample per node.
    Map<String, List<PrometheusTextFormat.Sample>> dev = scrape(all);
    assertThat(dev.get("leasehold_raft_term")).extracting(s -> s.labels().get("node")).containsExactlyInAnyOrder("n1", "n2", "n3");
    assertThat(dev.get("leasehold_raft_role").stream().filter(s -> s.labels().get("role").equals("LEADER") && s.value() == 1))
        .hasSize(1);

    long writesBefore = (long) value(scrape, "leasehold_write_seconds_count", Map.of());
    long session = grant("metrics-test");
    AcquireResponse got = acquire("metrics-lease", "metrics-test#1", session);
    assertThat(got.getAcquired()).isTrue();
    await("the lease counted on every node").atMost(PATIENCE).until(
        () -> scrape(all).get("leasehold_leases_held").stream().allMatch(s -> s.value() >= 1));
    release("metrics-lease", "metrics-test#1", got.getToken());
    // The writes went in through node n1: its count grew by the grant, the acquire, the release.
    assertThat(value(scrape(perNode[0]), "leasehold_write_seconds_count", Map.of()))
        .isGreaterThanOrEqualTo(leader == 0 ? writesBefore + 3 : 3);

    // Writes in a Batch call (how the client sends acquires and releases) count the same.
    long beforeBatch = (long) value(scrape(perNode[0]), "leasehold_write_seconds_count", Map.of());
    io.leasehold.core.proto.BatchResponse batch =
        stub().batch(
            io.leasehold.core.proto.BatchRequest.newBuilder()
                .addOps(io.leasehold.core.proto.BatchOp.newBuilder().setGrant(
                    GrantRequest.newBuilder().setCall(call()).setOwner("metrics-batch").setTtlMillis(60_000)))
                .addOps(io.leasehold.core.proto.BatchOp.newBuilder().setGrant(
                    GrantRequest.newBuilder().setCall(call()).setOwner("metrics-batch").setTtlMillis(60_000)))
                .build());
    assertThat(batch.getResultsList()).allMatch(io.leasehold.core.proto.BatchResult::hasResponse);
    assertThat(value(scrape(perNode[0]), "leasehold_write_seconds_count", Map.of()))
        .as("the batch's two writes counted")
        .isGreaterThanOrEqualTo(beforeBatch + 2);
  }

  /**
   * The JDK's HTTP server reads a request on the thread that will answer it, and waited for a
   * client that never finishes its request without a limit: with every thread held so, {@code
   * /healthz} (a liveness probe) hung for good. Slow clients are now cut off after a few seconds.
   */
  @Test
  @Order(2)
  void clientsThatNeverFinishTheirRequestDoNotHangTheLivenessProbe() throws Exception {
    List<java.net.Socket> slow = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < 2 * StatusHttpServer.THREADS; i++) {
        java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), all.port());
        socket.getOutputStream().write("GET /status.json HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        slow.add(socket);
      }
      HttpResponse<String> health =
          http.sendAsync(
                  HttpRequest.newBuilder(uri(all, "/healthz")).build(),
                  HttpResponse.BodyHandlers.ofString())
              .get(60, TimeUnit.SECONDS);
      assertThat(health.statusCode()).isEqualTo(200);
    } finally {
      for (java.net.Socket socket : slow) {
        socket.close();
      }
    }
  }

  @Test
  @Order(2)
  void theParserIsStrict() {
    // The format check bites: each of these is refused.
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a{b=\"c\"} 1")).hasMessageContaining("line feed");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a{b=c} 1\n")).hasMessageContaining("not quoted");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a 1\nb 2\na 3\n")).hasMessageContaining("not together");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a 1\n# TYPE a gauge\n")).hasMessageContaining("TYPE after");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a 1x\n")).hasMessageContaining("bad value");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("# TYPE s summary\ns 1\n")).hasMessageContaining("summary");
    assertThatThrownBy(() -> PrometheusTextFormat.parse("a{n=\"1\"} 1\na{n=\"1\"} 2\n")).hasMessageContaining("twice");
  }

  @Test
  @Order(3)
  void theStatusPageInABrowserShowsTheLeaderAndALeaseComingAndGoing() throws Exception {
    Chromium chromium = new Chromium(Path.of("target", "chromium"));
    String page = uri(all, "/").toString();
    String leaderId = cluster.peers().get(cluster.leader().orElseThrow()).id();
    await("the leader's row").atMost(PATIENCE).until(
        () -> chromium.dumpDom(page).contains("<tr data-node=\"" + leaderId + "\" data-role=\"LEADER\">"));

    long session = grant("browser-test");
    AcquireResponse got = acquire("nightly-report", "browser-test#1", session);
    assertThat(got.getAcquired()).isTrue();
    String row = "<tr data-lease=\"nightly-report\">";
    await("the lease appears").atMost(PATIENCE).until(() -> {
      String dom = chromium.dumpDom(page);
      return dom.contains(row) && dom.contains("browser-test#1") && dom.contains(">" + got.getToken() + "<");
    });
    Path shot = chromium.screenshot(page, Path.of("target", "status-page.png"));
    assertThat(Files.size(shot)).as("a screenshot for a human to look at: %s", shot.toAbsolutePath()).isPositive();

    release("nightly-report", "browser-test#1", got.getToken());
    await("the lease is gone, its end in the events").atMost(PATIENCE).until(() -> {
      String dom = chromium.dumpDom(page);
      return !dom.contains(row) && dom.contains("<tr data-event=\"ENDED\">");
    });
  }

  @Test
  @Order(4)
  void readyzSays503OnANodeCutOffFromTheOthers() {
    int leader = cluster.leader().orElseThrow();
    int kept = (leader + 1) % 3;
    for (int i = 0; i < 3; i++) {
      if (i != kept) {
        cluster.stopNode(i);
      }
    }
    // Alone, the node's election timer runs out: it stands as a candidate and knows no leader.
    await("not ready without a leader").atMost(PATIENCE).until(() -> get(perNode[kept], "/readyz").statusCode() == 503);
    assertThat(get(perNode[kept], "/readyz").body()).contains("knows no leader");
    assertThat(get(perNode[kept], "/healthz").statusCode()).as("the process is still up").isEqualTo(200);
    assertThat(value(scrape(perNode[kept]), "leasehold_raft_has_leader", Map.of())).isEqualTo(0);
    // A stopped node is no longer served: the all-nodes view says it is not ready either.
    assertThat(get(all, "/readyz").statusCode()).isEqualTo(503);
  }

  // ---- helpers ----

  private static Map<String, List<PrometheusTextFormat.Sample>> scrape(StatusHttpServer s) {
    HttpResponse<String> r = get(s, "/metrics");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValue(PrometheusText.CONTENT_TYPE);
    return PrometheusTextFormat.parse(r.body());
  }

  private static double value(Map<String, List<PrometheusTextFormat.Sample>> scrape, String name, Map<String, String> labels) {
    return scrape.values().stream()
        .flatMap(List::stream)
        .filter(s -> s.name().equals(name) && s.labels().entrySet().containsAll(labels.entrySet()))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no sample " + name + labels))
        .value();
  }

  private static URI uri(StatusHttpServer s, String path) {
    return URI.create("http://" + InetAddress.getLoopbackAddress().getHostAddress() + ":" + s.port() + path);
  }

  private static HttpResponse<String> get(StatusHttpServer s, String path) {
    return send(s, HttpRequest.newBuilder(uri(s, path)).GET());
  }

  private static HttpResponse<String> send(StatusHttpServer s, HttpRequest.Builder request) {
    try {
      return http.send(request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static LeaseholdGrpc.LeaseholdBlockingStub stub() {
    return LeaseholdGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
  }

  private static CallId call() {
    return CallId.newBuilder().setClientIdHigh(0x4854_5450).setClientIdLow(1).setCallId(calls.incrementAndGet()).build();
  }

  private static long grant(String owner) {
    return stub().grant(GrantRequest.newBuilder().setCall(call()).setOwner(owner).setTtlMillis(60_000).build()).getSessionId();
  }

  private static AcquireResponse acquire(String name, String holder, long session) {
    return stub().acquire(
        AcquireRequest.newBuilder().setCall(call()).setName(name).setHolder(holder).setRequestId(1).setSessionId(session).build());
  }

  private static void release(String name, String holder, long token) {
    assertThat(stub().release(ReleaseRequest.newBuilder().setCall(call()).setName(name).setHolder(holder).setToken(token).build())
            .getReleased())
        .isTrue();
  }
}
