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
class BenchPlumbingTest {

  static {
    BenchMain.quietLogs(); // before the first logger exists, as the command does
  }

  private static final Duration SHORT = Duration.ofMillis(700);

  private static Result acquireRelease;
  private static Result contended;
  private static Result hold;

  @BeforeAll
  static void runLoadWorkloads() throws InterruptedException {
    acquireRelease = new AcquireRelease(ClientFactory.forUri("memory:"), "memory",
        new AcquireRelease.Params(2, 4, Duration.ofSeconds(5), Duration.ofMillis(100), SHORT)).run();
    contended = new Contended(ClientFactory.forUri("memory:"), "memory",
        new Contended.Params(3, Duration.ofSeconds(5), Duration.ZERO, Duration.ofMillis(100), SHORT)).run();
    // TTL 1 s renews every 333 ms, so the measured second sees each lease renewed.
    hold = new Hold(ClientFactory.forUri("memory:"), "memory", Optional.empty(),
        new Hold.Params(2, 2_000, Duration.ofSeconds(1), null, 64, Duration.ofMinutes(1), Duration.ofMillis(100), Duration.ofSeconds(1), true)).run();
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
  void leaderFailoverMeasuresEachRound() throws InterruptedException {
    FakeCluster cluster = new FakeCluster();
    ClientFactory clients = ClientFactory.forUri("memory:");
    Result r = new LeaderFailover(cluster, clients, i -> clients,
        new LeaderFailover.Params(2, Duration.ofSeconds(1), Duration.ofSeconds(10))).run();
    assertThat(cluster.kills).hasValue(2);
    assertThat(cluster.restarts).hasValue(2);
    assertThat(r.value("rounds")).isEqualTo(2);
    assertThat(r.get("next_acquire_p50_ms")).get().matches(Figure::measured);
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
  }

  @Test
  void theComparisonShowsEveryStoreTheRatiosToEtcdAndTheTargets() {
    Result fsync = FsyncProbe.run(20);
    assertThat(fsync.value("fsync_p99_ms")).isPositive();
    Result lowLoad = new Result("low-load", "memory").figure("acquire_p99_ms", "acquire p99", 0.5, "ms");
    List<Result> results = List.of(lowLoad, acquireRelease, contended, hold);
    Compare.Params params = Compare.Params.defaults(false);
    Compare.Outcome outcome = new Compare.Outcome(params, fsync,
        Map.of("core", results, "etcd", results, "zookeeper", results), Map.of(), Map.of());
    ComparisonTable table = new ComparisonTable(outcome);
    String text = table.render();
    assertThat(text).contains("core/etcd", "zk/etcd", "acquire-release: cycles", "1.00x", "targets (core)");
    assertThat(table.targets()).extracting(ComparisonTable.Verdict::verdict).doesNotContain("n/a");
    assertThat(Json.write(table.toJson())).contains("\"targets\"", "\"core/etcd\"", "\"fsync_p99_ms\"");
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
