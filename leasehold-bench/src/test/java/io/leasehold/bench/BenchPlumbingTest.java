package io.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.bench.cluster.ManagedCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Plumbing, not a benchmark: each workload's measuring code runs briefly on the in-process memory
 * store and its table and JSON carry the figures. No figure's size is checked beyond "something was
 * measured", since speed is not what a test may assert.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class BenchPlumbingTest {

  static {
    BenchMain.quietLogs(); // before the first logger exists, as the command does
  }

  private static final Duration SHORT = Duration.ofMillis(700);

  private static Result acquireRelease;
  private static Result contended;
  private static Result hold;
  private static Result flooded;

  @BeforeAll
  static void runLoadWorkloads() throws InterruptedException {
    acquireRelease = new AcquireRelease(ClientFactory.forUri("memory:"), "memory",
        new AcquireRelease.Params(2, 4, Duration.ofSeconds(5), Duration.ofMillis(100), SHORT)).run();
    contended = new Contended(ClientFactory.forUri("memory:"), "memory",
        new Contended.Params(3, Duration.ofSeconds(5), Duration.ZERO, Duration.ofMillis(100), SHORT)).run();
    // TTL 3 s renews every second, so the measured 1.5 s see each lease renewed; a shorter TTL
    // (operations time out after TTL / 6) loses leases on a machine loaded by parallel builds.
    hold = new Hold(ClientFactory.forUri("memory:"), "memory", Optional.empty(),
        new Hold.Params(2, 2_000, Duration.ofSeconds(3), null, 64, Duration.ofMinutes(1), Duration.ofMillis(100), Duration.ofMillis(1_500), true, null)).run();
    flooded = new Hold(ClientFactory.forUri("memory:"), "memory", Optional.empty(),
        new Hold.Params(2, 500, Duration.ofSeconds(3), null, 64, Duration.ofMinutes(1), Duration.ofMillis(100), Duration.ofMillis(1_500), true,
            new Hold.Flood(2, 4, Duration.ofSeconds(5)))).run();
  }

  @Test
  void acquireReleaseMeasuresCyclesAndLatencies() {
    assertThat(acquireRelease.value("cycles_per_s")).isPositive();
    assertThat(acquireRelease.value("acquire_count")).isPositive();
    assertThat(acquireRelease.value("release_count")).isPositive();
    assertThat(acquireRelease.get("acquire_p99_ms")).get().matches(Figure::measured);
    assertThat(acquireRelease.errorTotal()).isZero();
    assertThat(acquireRelease.toTable()).contains("acquire+release cycles", "acquire latency p99.9", "errors: none");
    assertThat(Json.write(acquireRelease.toJson())).contains("\"cycles_per_s\"", "\"acquire_p999_ms\"", "\"workload\": \"acquire-release\"");
  }

  @Test
  void contendedMeasuresHandoversWithIncreasingTokens() {
    assertThat(contended.value("handovers_per_s")).isPositive();
    assertThat(contended.value("handover_gap_count")).isPositive();
    assertThat(contended.value("token_regressions")).isZero();
    assertThat(contended.errorTotal()).isZero();
    assertThat(contended.toTable()).contains("handovers", "release -> next acquire p99");
    assertThat(Json.write(contended.toJson())).contains("\"handovers_per_s\"", "\"handover_gap_p50_ms\"");
  }

  @Test
  void waitersMeasureHandoversBothWhenObservingAndWhenPolling() throws InterruptedException {
    for (boolean observe : new boolean[] {true, false}) {
      // TTL 1 s: the polling backoff tops out at its heartbeat (333 ms), so handovers happen in
      // the short window either way.
      Result waiters = new Waiters(ClientFactory.forUri("memory:"), "memory", Optional.empty(),
          new Waiters.Params(2, Duration.ofSeconds(1), Duration.ofMillis(20), observe, Duration.ofMillis(300),
              Duration.ofMillis(1_500))).run();
      assertThat(waiters.value("handovers_per_s")).as("mode observe=%s", observe).isPositive();
      assertThat(waiters.value("handover_gap_count")).isPositive();
      assertThat(waiters.value("token_regressions")).isZero();
      assertThat(waiters.toTable()).contains("leader's work returned -> next leader's work started p99",
          observe ? "observe" : "poll");
    }
  }

  @Test
  void holdCountsRenewalsAndNoLosses() {
    assertThat(hold.value("held")).isEqualTo(2_000);
    assertThat(hold.value("renewals_per_s")).isPositive();
    assertThat(hold.value("spurious_losses")).isZero();
    assertThat(hold.value("held_at_end")).isEqualTo(2_000);
    assertThat(hold.value("client_cpu_cores")).isPositive();
    assertThat(hold.get("teardown_s")).get().matches(Figure::measured);
    assertThat(hold.errorTotal()).isZero();
    assertThat(hold.toTable()).contains("renewals reached", "spurious losses", "only on a cluster the bench started");
    assertThat(Json.write(hold.toJson())).contains("\"renewals_per_s\"", "\"setup_s\"");
  }

  @Test
  void holdWithAFloodMeasuresTheSameLeasesAgainWhileOtherClientsWrite() {
    assertThat(flooded.value("held")).isEqualTo(500);
    assertThat(flooded.value("renewals_per_s")).isPositive();
    assertThat(flooded.value("flood_cycles_per_s")).isPositive();
    assertThat(flooded.value("flood_renewals_per_s")).isPositive();
    assertThat(flooded.value("flood_spurious_losses")).isZero();
    assertThat(flooded.value("flood_held_at_end")).isEqualTo(500);
    assertThat(flooded.value("flood_client_cpu_cores")).isNotNaN().isNotNegative();
    assertThat(flooded.value("client_cpu_us_per_op")).isNotNaN().isNotNegative();
    assertThat(flooded.safetyViolated()).isFalse();
    assertThat(flooded.toTable()).contains("flood: renewals reached", "flood: spurious losses");
    assertThat(hold.get("flood_renewals_per_s")).isEmpty();
  }

  @Test
  void loadWorkloadsMeasureClientCpuPerOperation() {
    // The process's CPU clock ticks in 10 ms steps on Linux: a short window on a busy machine may
    // see none, so only "measured" is asserted.
    assertThat(acquireRelease.value("client_cpu_cores")).isNotNaN().isNotNegative();
    assertThat(acquireRelease.value("client_cpu_us_per_op")).isNotNaN().isNotNegative();
    assertThat(contended.value("client_cpu_us_per_op")).isNotNaN().isNotNegative();
    // No cluster, no server figures.
    assertThat(acquireRelease.get("server_cpu_us_per_op")).isEmpty();
  }

  @Test
  void leaderFailoverMeasuresEachRound() throws InterruptedException {
    FakeCluster cluster = new FakeCluster();
    ClientFactory clients = ClientFactory.forUri("memory:");
    Result r = new LeaderFailover(cluster, clients, i -> clients,
        new LeaderFailover.Params(2, Duration.ofSeconds(1), Duration.ofSeconds(10))).run();
    assertThat(cluster.kills).hasValue(2);
    assertThat(cluster.restarts).hasValue(2);
    assertThat(r.value("rounds")).isEqualTo(2);
    assertThat(r.get("next_acquire_p50_ms")).get().matches(Figure::measured);
    assertThat(r.get("next_acquire_p99_ms")).get().matches(Figure::measured);
    assertThat(r.samples("next_acquire_ms")).hasSize(2);
    assertThat(r.value("lease_held_through")).isEqualTo(2);
    assertThat(r.get("lease_renewed_max_ms")).get().matches(Figure::measured);
    assertThat(r.value("lease_lost")).isZero();
    assertThat(r.toTable()).contains("kill -> next successful acquire p50", "lease A held through the kill");
  }

  @Test
  void theCommandPrintsTheTableAndWritesTheJsonFile(@TempDir Path dir) throws Exception {
    Path json = dir.resolve("ar.json");
    StringWriter out = new StringWriter();
    CommandLine cmd = BenchMain.commandLine();
    cmd.setOut(new PrintWriter(out));
    cmd.setErr(new PrintWriter(new StringWriter()));
    int status = cmd.execute("acquire-release", "--backend", "memory:", "--duration", "1s", "--warmup", "0s",
        "--clients", "1", "--window", "2", "--json", json.toString());
    assertThat(status).isZero();
    assertThat(out.toString()).contains("acquire-release on memory", "acquire latency p50", "JSON: " + json);
    assertThat(Files.readString(json)).contains("\"cycles_per_s\"", "\"clients\": 1");
  }

  @Test
  void aValueOutOfRangeIsBadUsageNamingTheOptionAndRange() {
    StringWriter err = new StringWriter();
    CommandLine cmd = BenchMain.commandLine();
    cmd.setOut(new PrintWriter(new StringWriter()));
    cmd.setErr(new PrintWriter(err));
    assertThat(cmd.execute("hold", "--backend", "memory:", "--leases", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--leases must be between 1 and 1,000,000; was 0");
    assertThat(cmd.execute("failover", "--backend", "memory:")).isEqualTo(2);
    assertThat(err.toString()).contains("failover --kill leader needs --start");
    assertThat(cmd.execute("acquire-release", "--backend", "memory:", "--keep-logs", "target/no-logs")).isEqualTo(2);
    assertThat(err.toString()).contains("--keep-logs needs --start: the bench keeps the logs of a cluster it started, not of memory:");
    assertThat(cmd.execute("expire-storm", "--backend", "memory:")).isEqualTo(2);
    assertThat(err.toString()).contains("expire-storm needs --start");
    assertThat(cmd.execute("expire-storm", "--start", "etcd", "--leases", "400")).isEqualTo(2);
    assertThat(err.toString()).contains("--leases must be at least 201 x --holders (804 with 4 holders)");
    // compare checks every option before it starts anything.
    assertThat(cmd.execute("compare", "--rounds", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--rounds must be between 1 and 20; was 0");
    assertThat(cmd.execute("compare", "--kills", "-1")).isEqualTo(2);
    assertThat(err.toString()).contains("--kills must be between 0 and 1,000; was -1");
    assertThat(cmd.execute("compare", "--storm-leases", "100")).isEqualTo(2);
    assertThat(err.toString()).contains("--storm-leases must be 0 or at least 804");
  }

  @Test
  void theComparisonOfRealWorkloadResultsShowsEveryStoreAndTheTargets() {
    Result fsync = FsyncProbe.run(20);
    assertThat(fsync.value("fsync_p99_ms")).isPositive();
    Result lowLoad = new Result("low-load", "memory").figure("acquire_p99_ms", "acquire p99", 0.5, "ms");
    List<Result> results = List.of(lowLoad, acquireRelease, contended, flooded);
    Compare.Params params = Compare.Params.defaults(true);
    List<Compare.Run> runs = List.of(
        new Compare.Run(1, 1, "core", 1.0, results, null),
        new Compare.Run(1, 2, "etcd", 1.0, results, null),
        new Compare.Run(1, 3, "zookeeper", 1.0, results, null));
    Compare.Outcome outcome = new Compare.Outcome(params, fsync, runs, Map.of(), Map.of());
    ComparisonTable table = new ComparisonTable(outcome);
    String text = table.render();
    assertThat(text).contains("core/etcd", "core/zk", "acquire-release: cycles", "1.00x", "targets (core",
        "hold + flood: renewals reached", "acquire-release: client CPU per cycle");
    assertThat(Json.write(table.toJson())).contains("\"targets\"", "\"core/etcd\"", "\"fsync_p99_ms\"", "\"runs\"");
  }

  /** Stands for a 3-member cluster around the memory store: member 0 leads; kills change nothing. */
  private static final class FakeCluster implements ManagedCluster {
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger restarts = new AtomicInteger();

    @Override
    public String name() {
      return "fake";
    }

    @Override
    public String backendUri() {
      return "memory:";
    }

    @Override
    public String settings() {
      return "fake: a memory store";
    }

    @Override
    public List<Member> members() {
      Optional<ProcessHandle> self = Optional.of(ProcessHandle.current());
      return List.of(new Member("m0", "-", self), new Member("m1", "-", self), new Member("m2", "-", self));
    }

    @Override
    public Optional<Integer> leader() {
      return Optional.of(0);
    }

    @Override
    public void kill(int i) {
      kills.incrementAndGet();
    }

    @Override
    public void restart(int i) {
      restarts.incrementAndGet();
    }

    @Override
    public void close() {}
  }
}
