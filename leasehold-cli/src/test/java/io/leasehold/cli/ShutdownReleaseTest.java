package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseSettings;
import io.leasehold.Subscription;
import io.leasehold.server.LocalCluster;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Coordinated shutdown. A process that is asked to stop (SIGTERM to a child JVM)
 * releases its lease, so the next holder starts at once. The TTL is 60 s, longer than this whole
 * test may take, so a takeover here cannot be an expiry; and the store's own events say which it
 * was: {@code RELEASED} before the next {@code ACQUIRED}, never {@code EXPIRED}.
 */
@Timeout(value = 50, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ShutdownReleaseTest {

  private static final Duration TTL = Duration.ofSeconds(60);

  private static LocalCluster cluster;
  private static LeaseBackend store;

  @TempDir Path dir;

  private final List<Process> children = new ArrayList<>();
  private final List<LeaseEvent> events = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startCore() throws IOException {
    cluster = LocalCluster.start(1, 0, Files.createTempDirectory(Path.of("target"), "shutdown-"), c -> c);
    store = LeaseBackend.open(cluster.uri());
  }

  @AfterAll
  static void stopCore() throws Exception {
    if (store != null) {
      store.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @AfterEach
  void killChildren() {
    children.forEach(Process::destroyForcibly);
  }

  @Test
  void sigtermToRunReleasesTheLeaseAndTheNextRunWaitStartsAtOnce() throws Exception {
    Subscription watching = store.observe("nightly", events::add);
    Path started = dir.resolve("started");
    Process first =
        child(dir.resolve("first.err"), "io.leasehold.cli.Main", "run", "--backend", cluster.uri(),
            "--lease", "nightly", "--owner", "first", "--ttl", "60s", "--",
            "sh", "-c", "echo $LEASEHOLD_FENCING_TOKEN > " + started + "; exec sleep 300");
    await("the first run's command started").atMost(Duration.ofSeconds(30))
        .failFast("the first run ended: " + errOf(dir.resolve("first.err")), () -> !first.isAlive())
        .until(() -> Files.exists(started) && !Files.readString(started).isBlank());
    long firstToken = Long.parseLong(Files.readString(started).strip());

    Path ran = dir.resolve("ran");
    StringWriter err = new StringWriter();
    CompletableFuture<Integer> second =
        CompletableFuture.supplyAsync(
            () ->
                Main.commandLine()
                    .setErr(new PrintWriter(err, true))
                    .execute("run", "--backend", cluster.uri(), "--lease", "nightly", "--owner",
                        "second", "--ttl", "60s", "--wait", "--",
                        "sh", "-c", "echo $LEASEHOLD_FENCING_TOKEN > " + ran));
    await("the second run waits").atMost(Duration.ofSeconds(30))
        .until(() -> err.toString().contains("waiting for it"));

    first.destroy(); // SIGTERM, as systemd or Kubernetes stops a process

    assertThat(first.waitFor(30, TimeUnit.SECONDS)).as("the first run exited").isTrue();
    assertThat(second.get(30, TimeUnit.SECONDS)).as(err.toString()).isZero();
    long secondToken = Long.parseLong(Files.readString(ran).strip());
    await().atMost(Duration.ofSeconds(10)).until(() -> events.size() >= 5);
    watching.cancel();

    assertThat(events)
        .extracting(e -> e.type() + " " + e.holding().map(h -> h.owner() + " " + h.token()).orElse("free"))
        .as("the store's own account: released by the first, then taken by the second")
        .startsWith(
            "CURRENT free",
            "ACQUIRED first " + firstToken,
            "RELEASED first " + firstToken,
            "ACQUIRED second " + secondToken,
            "RELEASED second " + secondToken);
  }

  @Test
  void aBackendWithReleaseOnShutdownReleasesItsLeasesWhenTheJvmIsTerminated() throws Exception {
    Subscription watching = store.observe("compactor", events::add);
    Process holder =
        child(dir.resolve("holder.err"), ShutdownHolder.class.getName(), cluster.uri(), "compactor");
    await("the child holds the lease").atMost(Duration.ofSeconds(30))
        .failFast("the child ended: " + errOf(dir.resolve("holder.err")), () -> !holder.isAlive())
        .until(() -> events.stream().anyMatch(e -> e.type() == LeaseEvent.Type.ACQUIRED));

    holder.destroy(); // SIGTERM: the JVM runs its shutdown hooks

    assertThat(holder.waitFor(30, TimeUnit.SECONDS)).as("the child exited").isTrue();
    await("the release").atMost(Duration.ofSeconds(10)).until(() -> events.size() >= 3);
    watching.cancel();
    assertThat(events).extracting(LeaseEvent::type)
        .containsExactly(LeaseEvent.Type.CURRENT, LeaseEvent.Type.ACQUIRED, LeaseEvent.Type.RELEASED);
    try (Lease next = store.newLease(LeaseSettings.builder("compactor", "next").ttl(TTL).build())) {
      assertThat(next.acquire().get(20, TimeUnit.SECONDS)).as("free for the next holder").isTrue();
    }
  }

  @Test
  void aBoundOutOfRangeIsRefusedNamingIt() {
    assertThatThrownBy(() -> store.releaseOnShutdown(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("releaseOnShutdown bound must be between 1ms and 10min; was PT0S");
    assertThatThrownBy(() -> store.releaseOnShutdown(Duration.ofMinutes(11)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("was PT11M");
  }

  private Process child(Path errFile, String mainClass, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    command.addAll(List.of(args));
    Process p =
        new ProcessBuilder(command)
            .directory(new File(System.getProperty("user.dir")))
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(errFile.toFile())
            .start();
    children.add(p);
    return p;
  }

  private static String errOf(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file) : "";
    } catch (IOException e) {
      return e.toString();
    }
  }

  /**
   * The child JVM: {@code ShutdownHolder <backend-uri> <lease>} opens the backend with {@link
   * LeaseBackend#releaseOnShutdown}, acquires the lease with a 60 s TTL and waits to be stopped.
   */
  public static final class ShutdownHolder {
    public static void main(String[] args) throws Exception {
      LeaseBackend backend = LeaseBackend.open(args[0]);
      backend.releaseOnShutdown(Duration.ofSeconds(10));
      Lease lease = backend.newLease(LeaseSettings.builder(args[1], "child").ttl(TTL).build());
      while (!lease.acquire().get(30, TimeUnit.SECONDS)) {
        Thread.onSpinWait();
      }
      new CountDownLatch(1).await(); // until SIGTERM
    }
  }
}
