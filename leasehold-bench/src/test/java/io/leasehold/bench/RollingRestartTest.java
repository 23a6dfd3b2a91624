package io.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.bench.cluster.ManagedCluster;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * Plumbing of {@code rolling-restart}, not a benchmark: the workload on the in-process memory store
 * behind a stand-in for a 3-member cluster that records its stops and restarts. Every member is
 * stopped and restarted once, in order, a restarted member is waited for until it has applied the
 * leader's index, and the figures are in the table. The real run is BENCHMARKS.md's.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class RollingRestartTest {

  static {
    BenchMain.quietLogs();
  }

  @Test
  void eachMemberIsStoppedRestartedAndWaitedForInTurnWhileTheLeasesStayHeld() throws InterruptedException {
    FakeCluster cluster = new FakeCluster();
    // TTL 3 s: renewals every second, unhurried on a loaded machine (as BenchPlumbingTest's hold).
    Result r = new RollingRestart(cluster, ClientFactory.forUri("memory:"),
        new RollingRestart.Params(2, 200, Duration.ofSeconds(3), 16, Duration.ofMinutes(1), Duration.ofMillis(100),
            Duration.ofMillis(100), Duration.ofMillis(10), Duration.ofSeconds(30))).run();

    assertThat(cluster.events).containsExactly("stop 0", "restart 0", "stop 1", "restart 1", "stop 2", "restart 2");
    assertThat(cluster.caughtUpPolls.get()).as("each restarted member was asked for its applied index until it caught up").isGreaterThanOrEqualTo(6);
    assertThat(r.value("held")).isEqualTo(200);
    assertThat(r.value("spurious_losses")).isZero();
    assertThat(r.value("held_at_end")).isEqualTo(200);
    assertThat(r.get("worst_stall_ms")).get().matches(Figure::measured);
    assertThat(r.value("stall_count")).isPositive();
    for (String id : List.of("m0", "m1", "m2")) {
      assertThat(r.get(id + "_restart_ms")).get().matches(Figure::measured);
    }
    assertThat(r.get("restart_max_ms")).get().matches(Figure::measured);
    assertThat(r.safetyViolated()).isFalse();
    assertThat(r.toTable()).contains("rolling-restart on fake", "m0 (led; next leader m1): SIGTERM -> exited",
        "worst write stall", "leases lost (onLost");
    assertThat(Json.write(r.toJson())).contains("\"worst_stall_ms\"", "\"spurious_losses\"", "\"leader_after_stop\": \"m1\"");
  }

  @Test
  void itNeedsACoreTheBenchStartsAndChecksItsOptions() {
    StringWriter err = new StringWriter();
    CommandLine cmd = BenchMain.commandLine();
    cmd.setOut(new PrintWriter(new StringWriter()));
    cmd.setErr(new PrintWriter(err));
    assertThat(cmd.execute("rolling-restart", "--backend", "memory:")).isEqualTo(2);
    assertThat(err.toString()).contains("rolling-restart needs --start core");
    assertThat(cmd.execute("rolling-restart", "--start", "etcd")).isEqualTo(2);
    assertThat(cmd.execute("rolling-restart", "--start", "core", "--leases", "0")).isEqualTo(2);
    assertThat(err.toString()).contains("--leases must be between 1 and 1,000,000; was 0");
    assertThat(cmd.execute("rolling-restart", "--start", "core", "--settle", "11m")).isEqualTo(2);
    assertThat(err.toString()).contains("--settle must be between 0ms and 10m; was 11m");
    StringWriter help = new StringWriter();
    cmd.setOut(new PrintWriter(help));
    assertThat(cmd.execute("--help")).isZero();
    assertThat(help.toString()).contains("rolling-restart");
  }

  /**
   * Three members around the memory store: the leader is the lowest running member; stops and
   * restarts are recorded; a restarted member's applied index reaches the leader's on the third ask.
   */
  private static final class FakeCluster implements ManagedCluster {
    final List<String> events = new ArrayList<>();
    final boolean[] running = {true, true, true};
    final AtomicInteger caughtUpPolls = new AtomicInteger();
    final AtomicLong index = new AtomicLong(100);
    final int[] asksSinceRestart = new int[3];

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
    public synchronized List<Member> members() {
      List<Member> members = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        members.add(new Member("m" + i, "-", running[i] ? Optional.of(ProcessHandle.current()) : Optional.empty()));
      }
      return members;
    }

    @Override
    public synchronized Optional<Integer> leader() {
      for (int i = 0; i < 3; i++) {
        if (running[i]) {
          return Optional.of(i);
        }
      }
      return Optional.empty();
    }

    @Override
    public synchronized OptionalLong appliedIndex(int i) {
      if (!running[i]) {
        return OptionalLong.empty();
      }
      if (leader().orElse(-1) == i) {
        return OptionalLong.of(index.incrementAndGet());
      }
      caughtUpPolls.incrementAndGet();
      return OptionalLong.of(++asksSinceRestart[i] >= 3 ? Long.MAX_VALUE : 0);
    }

    @Override
    public synchronized void stop(int i) {
      events.add("stop " + i);
      running[i] = false;
    }

    @Override
    public void kill(int i) {
      throw new AssertionError("rolling-restart never kills");
    }

    @Override
    public synchronized void restart(int i) {
      events.add("restart " + i);
      running[i] = true;
      asksSinceRestart[i] = 0;
    }

    @Override
    public void close() {}
  }
}
