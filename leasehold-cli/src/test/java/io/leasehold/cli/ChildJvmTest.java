package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseBackend;
import io.leasehold.recipes.membership.Membership;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line as its own JVM, as a terminal or a service manager runs it. A requested stop is a success: {@code dev}, {@code server}, {@code watch}, {@code members
 * --watch} and {@code members --join}, each a child JVM as a service manager runs it, exit 0 on
 * SIGTERM (and on SIGINT, Ctrl-C, where the child is not started with SIGINT ignored), as
 * docs/cli.md's exit status table says. The demo's timeline is its whole output: no log lines on
 * stderr unless --verbose.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ChildJvmTest {

  private static final Duration START = Duration.ofSeconds(60);
  /** A line the JVM itself writes: a HotSpot warning, or a JDK's "WARNING: ..." notice. */
  private static final Pattern JVM_WARNING = Pattern.compile("^(\\S.* VM warning: |WARNING: )");

  @TempDir Path dir;

  private final List<Process> children = new ArrayList<>();

  @AfterEach
  void killChildren() {
    children.forEach(Process::destroyForcibly);
  }

  @Test
  void devAndTheWatchersExit0OnSigterm() throws Exception {
    Child dev = child("dev", "dev", "--nodes", "1", "--port", "0");
    dev.awaitOut("Ctrl-C stops the cluster\\.");
    Matcher m = Pattern.compile("(?m)^(leasehold://\\S+)$").matcher(dev.out());
    assertThat(m.find()).as(dev.out()).isTrue();
    String uri = m.group(1);

    Child watch = child("watch", "watch", "nightly", "--backend", uri);
    Child members = child("members", "members", "workers", "--backend", uri, "--watch");
    Child join = child("join", "members", "workers", "--backend", uri, "--join", "node-2", "--ttl", "30s",
        "--timeout", "1m"); // a cold JVM's first calls get ttl/6 each
    watch.awaitOut(".* CURRENT nightly free");
    join.awaitOut("joined group 'workers' as node-2 .*");
    members.awaitOut(".* JOINED node-2 .*");

    assertThat(watch.terminate()).as(watch.err()).isZero();
    assertThat(members.terminate()).as(members.err()).isZero();
    assertThat(join.terminate()).as(join.err()).isZero();
    assertThat(join.out()).contains("left group 'workers'");
    try (LeaseBackend backend = LeaseBackend.open(uri)) {
      assertThat(Membership.list(backend, "workers", 64).get(20, TimeUnit.SECONDS)).as("node-2 left").isEmpty();
    }
    assertThat(dev.terminate()).as(dev.out() + dev.err()).isZero();
    assertThat(dev.out()).contains("leasehold dev: stopped");
  }

  @Test
  void serverExits0OnSigterm() throws Exception {
    int port = RunningCli.freePortPair();
    Child server = child("server", "server", "--id", "n1", "--peers", "n1=127.0.0.1:" + port,
        "--data-dir", dir.resolve("n1").toString(), "--bootstrap");
    server.awaitErr(".*Ctrl-C or SIGTERM stops it\\.");

    assertThat(server.terminate()).as(server.err()).isZero();
    assertThat(server.err()).contains("leasehold server: stopping node n1");
  }

  @Test
  void theExitStatusTableSaysAStopIsExit0() throws IOException {
    String docs = Files.readString(Path.of("../docs/cli.md"));
    Matcher zero = Pattern.compile("(?m)^\\| 0 \\| (.*)$").matcher(docs);
    assertThat(zero.find()).isTrue();
    assertThat(zero.group(1)).contains("SIGTERM", "Ctrl-C", "`dev`", "`server`", "`watch`", "`members`");
    assertThat(docs).doesNotContainPattern("(?m)^\\| 130 \\|.*\\b(dev|server)\\b");
  }

  @Test
  void theDemoPrintsItsTimelineWithoutLogLinesOnStderr() throws Exception {
    Child demo = child("demo", "demo", "--ttl", "300ms", "--duration", "4s", "--seed", "7");

    assertThat(demo.awaitExit()).as(demo.out() + demo.err()).isZero();
    assertThat(demo.out()).contains("verdict: SAFE");
    // The JVM's own warnings (a machine's container limits, a JDK's deprecations) are not the
    // demo's; any other line is.
    assertThat(demo.err().lines().filter(l -> !JVM_WARNING.matcher(l).find()))
        .as("stderr, the JVM's own warnings left out: " + demo.err())
        .isEmpty();
  }

  private Child child(String name, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(Main.class.getName());
    command.addAll(List.of(args));
    Path out = dir.resolve(name + ".out");
    Path err = dir.resolve(name + ".err");
    Process p =
        new ProcessBuilder(command)
            .directory(new File(System.getProperty("user.dir")))
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    children.add(p);
    return new Child(p, out, err);
  }

  private record Child(Process process, Path outFile, Path errFile) {

    String out() {
      return read(outFile);
    }

    String err() {
      return read(errFile);
    }

    void awaitOut(String regex) {
      Pattern line = Pattern.compile("(?m)^" + regex + "$");
      try {
        await(regex).atMost(START).pollInterval(Duration.ofMillis(100))
            .failFast("the command ended", () -> !process.isAlive())
            .until(() -> line.matcher(out()).find());
      } catch (RuntimeException e) {
        throw new AssertionError(e.getMessage() + "; stdout:\n" + out() + "\nstderr:\n" + err(), e);
      }
    }

    void awaitErr(String regex) {
      Pattern line = Pattern.compile("(?m)^" + regex + "$");
      try {
        await(regex).atMost(START).pollInterval(Duration.ofMillis(100))
            .failFast("the command ended", () -> !process.isAlive())
            .until(() -> line.matcher(err()).find());
      } catch (RuntimeException e) {
        throw new AssertionError(e.getMessage() + "; stderr:\n" + err(), e);
      }
    }

    /** SIGTERM, as systemd and Kubernetes stop a process; {@return its exit status} */
    int terminate() throws InterruptedException {
      process.destroy();
      return awaitExit();
    }

    int awaitExit() throws InterruptedException {
      assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("it exited; " + out() + err()).isTrue();
      return process.exitValue();
    }

    private static String read(Path file) {
      try {
        return Files.exists(file) ? Files.readString(file) : "";
      } catch (IOException e) {
        return e.toString();
      }
    }
  }
}
