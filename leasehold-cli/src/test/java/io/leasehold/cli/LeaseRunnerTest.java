package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code leasehold run} against the memory store on real time, with real child processes ({@code
 * sh -c}). Loss is driven through the store, as an operator or a takeover would.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LeaseRunnerTest {

  private static final Duration TTL = Duration.ofSeconds(2);

  @TempDir Path dir;

  private final MemoryStore store = MemoryStore.create();
  private final MemoryBackend here = store.connect();
  private final MemoryBackend elsewhere = store.connect();
  private final StringWriter errText = new StringWriter();
  private final PrintWriter err = new PrintWriter(errText, true);

  /** Processes a test started; killed afterwards so that a failing test leaves none behind. */
  private final List<Long> started = new java.util.concurrent.CopyOnWriteArrayList<>();

  @AfterEach
  void close() {
    for (long pid : started) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
    here.close();
    elsewhere.close();
  }

  private static Lease lease(MemoryBackend backend, String owner) {
    return backend.newLease(LeaseSettings.builder("nightly-backup", owner).ttl(TTL).build());
  }

  private LeaseRunner runner(Lease lease, boolean wait, Duration timeout, String script) {
    return new LeaseRunner(
        lease, List.of("sh", "-c", script), wait, timeout, Duration.ofMillis(500), err);
  }

  private Path file(String name) {
    return dir.resolve(name);
  }

  private static String read(Path p) {
    try {
      return Files.exists(p) ? Files.readString(p).strip() : "";
    } catch (IOException e) {
      return "";
    }
  }

  @Test
  void aFreeLeaseRunsTheCommandWithItsEnvironmentAndPassesItsStatusOn() throws Exception {
    Lease lease = lease(here, "alice@host-1:42");
    Path out = file("env");

    int status =
        runner(lease, false, null,
                "echo \"$LEASEHOLD_LEASE $LEASEHOLD_OWNER $LEASEHOLD_FENCING_TOKEN\" > " + out
                    + "; exit 3")
            .run();

    assertThat(status).isEqualTo(3);
    assertThat(read(out)).matches("nightly-backup alice@host-1:42 [0-9]+");
    assertThat(lease.checkAlive()).as("released when the command exited").isFalse();
    assertThat(store.lookup("nightly-backup")).isEmpty();
  }

  @Test
  void aLeaseHeldElsewhereExits75AtOnceNamingTheHolder() throws Exception {
    Lease other = lease(elsewhere, "bob@host-2:7");
    assertThat(other.acquire().join()).isTrue();
    Path ran = file("ran");

    int status = runner(lease(here, "alice"), false, null, "touch " + ran).run();

    assertThat(status).isEqualTo(LeaseRunner.HELD_ELSEWHERE);
    assertThat(errText.toString())
        .contains("lease 'nightly-backup' is held by " + other.holder())
        .contains("--wait");
    assertThat(ran).doesNotExist();
  }

  @Test
  void waitRunsTheCommandOnceTheHolderReleases() {
    Lease other = lease(elsewhere, "bob");
    assertThat(other.acquire().join()).isTrue();
    Path ran = file("ran");
    Lease mine = lease(here, "alice");

    CompletableFuture<Integer> status =
        CompletableFuture.supplyAsync(() -> call(runner(mine, true, null, "touch " + ran)));
    await().atMost(Duration.ofSeconds(10)).until(() -> errText.toString().contains("waiting for it"));
    assertThat(ran).doesNotExist();
    other.release().join();

    await().atMost(Duration.ofSeconds(20)).until(status::isDone);
    assertThat(status.join()).isZero();
    assertThat(ran).exists();
  }

  /**
   * {@code --wait} observes the lease and asks again as soon as it frees. The
   * waiter's retry interval is 30 minutes (its first retry is 15-30 min after the refusal) and the
   * TTL 60 s, so only the observation explains a start within this test's bounds.
   */
  @Test
  void waitObservesTheLeaseAndRunsAsSoonAsTheHolderReleases() {
    Lease other = lease(elsewhere, "bob");
    assertThat(other.acquire().join()).isTrue();
    Path ran = file("ran");
    Lease mine =
        here.newLease(
            LeaseSettings.builder("nightly-backup", "alice")
                .ttl(Duration.ofSeconds(60))
                .retryInterval(Duration.ofMinutes(30))
                .acquireRetries(0)
                .build());
    LeaseRunner runner =
        new LeaseRunner(mine, List.of("sh", "-c", "touch " + ran), true, null,
            Duration.ofMillis(500), err, here);

    CompletableFuture<Integer> status = CompletableFuture.supplyAsync(() -> call(runner));
    await().atMost(Duration.ofSeconds(10)).until(() -> errText.toString().contains("waiting for it"));
    other.release().join();

    await("the command ran, told by the observation").atMost(Duration.ofSeconds(30))
        .until(status::isDone);
    assertThat(status.join()).isZero();
    assertThat(ran).exists();
  }

  @Test
  void waitWithATimeoutGivesUpWith75() throws Exception {
    Lease other = lease(elsewhere, "bob");
    assertThat(other.acquire().join()).isTrue();

    int status = runner(lease(here, "alice"), true, Duration.ofMillis(300), "true").run();

    assertThat(status).isEqualTo(LeaseRunner.HELD_ELSEWHERE);
    assertThat(errText.toString()).contains("gave up waiting").contains(other.holder().toString());
  }

  /**
   * The command traps SIGTERM (and keeps running), and leaves a child behind that ignores it: only
   * SIGKILL to the whole process group ends them both.
   */
  @Test
  void aLossWhileRunningSendsSigtermThenSigkillToTheWholeGroupAndExits70() throws Exception {
    Path pids = file("pids");
    Path terms = file("terms");
    String script =
        "trap 'echo term >> " + terms + "' TERM\n"
            + "(trap '' TERM; exec sleep 300) &\n"
            + "echo \"$$ $!\" > " + pids + ".tmp && mv " + pids + ".tmp " + pids + "\n"
            + "while :; do wait; done\n";
    Lease lease = lease(here, "alice");
    CompletableFuture<Integer> status =
        CompletableFuture.supplyAsync(() -> call(runner(lease, false, null, script)));
    await().atMost(Duration.ofSeconds(10)).until(() -> !read(pids).isEmpty());
    long[] both = java.util.Arrays.stream(read(pids).split(" ")).mapToLong(Long::parseLong).toArray();
    started.add(both[0]);
    started.add(both[1]);

    store.revoke("nightly-backup");

    await().atMost(Duration.ofSeconds(20)).until(status::isDone);
    assertThat(status.join()).isEqualTo(LeaseRunner.LOST);
    assertThat(read(terms)).as("SIGTERM reached the command").contains("term");
    for (long pid : both) {
      await("process " + pid + " is gone").atMost(Duration.ofSeconds(10)).until(() -> gone(pid));
    }
    assertThat(errText.toString())
        .contains("lost lease 'nightly-backup'")
        .contains("SIGTERM")
        .contains("exit 70");
  }

  @Test
  void aCommandThatCannotStartExits127AndReleases() throws Exception {
    Lease lease = lease(here, "alice");
    LeaseRunner runner =
        new LeaseRunner(
            lease, List.of(dir.resolve("no-such-command").toString()), false, null,
            Duration.ofMillis(100), err);

    int status = runner.run();

    assertThat(status).isEqualTo(127);
    assertThat(store.lookup("nightly-backup")).isEmpty();
  }

  private static int call(LeaseRunner runner) {
    try {
      return runner.run();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Gone, or a zombie nobody has reaped yet (PID 1 of a container may never reap it). */
  static boolean gone(long pid) {
    Path stat = Path.of("/proc/" + pid + "/stat");
    try {
      String s = Files.readString(stat);
      return s.substring(s.lastIndexOf(')') + 2).startsWith("Z");
    } catch (IOException e) {
      return true;
    }
  }
}
