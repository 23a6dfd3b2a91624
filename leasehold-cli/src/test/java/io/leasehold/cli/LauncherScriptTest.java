package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./leasehold} launcher script's build step, in a copy of the script
 * next to a fake source tree, with a stub {@code mvn} and a stub {@code java} on the PATH: the stub
 * build writes the jar in place as Maven does, completely or (interrupted) half; the stub java
 * refuses a jar without a zip end record, as {@code java -jar} says "Invalid or corrupt jarfile".
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("integration")
class LauncherScriptTest {

  private static final String STUB_MVN =
      """
      #!/usr/bin/env bash
      echo "mvn $*" >> "$STUB_LOG"
      mkdir -p leasehold-cli/target
      if [ -e building ]; then echo "overlap" >> "$STUB_LOG"; fi
      touch building
      case "$STUB_MVN" in
        slow) touch "$STUB_DIR/started"; for i in $(seq 600); do [ -e "$STUB_DIR/release" ] && break; sleep 0.05; done; printf 'PK\\005\\006\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0' > leasehold-cli/target/leasehold.jar; rm -f building ;;
        interrupted) rm -f building; printf 'PK\\003\\004half a jar' > leasehold-cli/target/leasehold.jar; exit 130 ;;
        *) printf 'PK\\005\\006\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0' > leasehold-cli/target/leasehold.jar; rm -f building ;;
      esac
      """;

  private static final String STUB_JAVA =
      """
      #!/usr/bin/env bash
      if [ "$1" = -version ]; then echo 'openjdk version "17.0.9" 2023-10-17' >&2; exit 0; fi
      if [ "$(tail -c 22 "$2" | head -c 4 | od -An -tx1 | tr -d ' \\n')" != 504b0506 ]; then
        echo "Error: Invalid or corrupt jarfile $2" >&2; exit 1
      fi
      echo "ran $2"
      echo "what the command said on its standard error" >&2
      """;

  @TempDir Path tmp;
  private Path root;
  private Path log;

  @BeforeEach
  void fakeCheckout() throws IOException {
    root = Files.createDirectories(tmp.resolve("checkout"));
    Files.copy(Path.of("../leasehold"), root.resolve("leasehold"));
    Files.writeString(root.resolve("pom.xml"), "<project/>");
    Path source = root.resolve("leasehold-cli/src/main/java/A.java");
    Files.createDirectories(source.getParent());
    Files.writeString(source, "class A {}");
    FileTime past = FileTime.from(Instant.now().minusSeconds(3600));
    Files.setLastModifiedTime(source, past);
    Files.setLastModifiedTime(root.resolve("pom.xml"), past);
    executable(tmp.resolve("bin/mvn"), STUB_MVN);
    executable(tmp.resolve("jdk/bin/java"), STUB_JAVA);
    log = tmp.resolve("mvn.log");
  }

  @Test
  void anInterruptedBuildIsRebuiltNotRunHalfWritten() throws Exception {
    Result first = launch("interrupted");
    assertThat(first.status).isNotZero();

    Result second = launch("ok");

    assertThat(second.status).as("second run; stderr: %s", second.err).isZero();
    assertThat(second.out).startsWith("ran ");
    assertThat(Files.readAllLines(log)).hasSize(2);
  }

  @Test
  void anUnreadableJarNewerThanTheSourcesIsRebuilt() throws Exception {
    assertThat(launch("ok").status).isZero();
    // As an interrupted build of an older launcher left it: truncated, and newer than the sources.
    try (var jars = Files.walk(root.resolve("leasehold-cli/target"))) {
      for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
        Files.writeString(jar, "PK\003\004trunc");
      }
    }

    Result again = launch("ok");

    assertThat(again.status).as("stderr: %s", again.err).isZero();
    assertThat(again.out).startsWith("ran ");
    assertThat(Files.readAllLines(log)).hasSize(2);
  }

  /**
   * What the command writes on standard error reaches the caller: its error messages (a bad option,
   * a refused start, a harness that could not finish) are all there. The launcher once closed its
   * build lock with {@code exec 9>&- 2>/dev/null}, which sent the command's standard error to
   * /dev/null: {@code ./leasehold server --bogus} printed nothing and exited 2.
   */
  @Test
  void theCommandsStandardErrorReachesTheCaller() throws Exception {
    assertThat(launch("ok").err).contains("what the command said on its standard error");
    Result again = launch("ok"); // the jar is up to date now: no build, no lock taken
    assertThat(again.err).isEqualTo("what the command said on its standard error\n");
  }

  @Test
  void anUpToDateJarIsNotRebuilt() throws Exception {
    assertThat(launch("ok").status).isZero();

    Result again = launch("ok");

    assertThat(again.status).isZero();
    assertThat(Files.readAllLines(log)).hasSize(1);
  }

  /**
   * Two launchers started together in a checkout whose jar is stale (a second terminal, or two
   * tools at once): Maven runs once at a time — two builds writing the same target/ directories
   * broke each other ("cannot find symbol" for generated classes) — and the second, having
   * waited, finds the jar built and runs it. The second launcher starts while the first one's
   * build runs (the stub build holds until the test releases it, once the second says it waits),
   * so the lock is what keeps it from building.
   */
  @Test
  void twoLaunchersStartedTogetherBuildOnceAndBothRun() throws Exception {
    Process first = start("slow", "1");
    Process second = null;
    try {
      await("the first launcher's build started").atMost(Duration.ofSeconds(30)).until(() -> Files.exists(tmp.resolve("started")));
      second = start("slow", "2");
      await("the second launcher waits for the first one's build")
          .atMost(Duration.ofSeconds(30))
          .until(() -> Files.readString(tmp.resolve("err2"), StandardCharsets.UTF_8).contains("waiting for another build"));
    } finally {
      Files.createFile(tmp.resolve("release")); // the stub build ends either way
    }
    Result a = end(first, "1");
    Result b = end(second, "2");

    assertThat(a.status).as("first; stderr: %s", a.err).isZero();
    assertThat(b.status).as("second; stderr: %s", b.err).isZero();
    assertThat(a.out).startsWith("ran ");
    assertThat(b.out).startsWith("ran ");
    assertThat(Files.readAllLines(log)).as("Maven runs").containsExactly("mvn " + MVN_ARGS);
  }

  private static final String MVN_ARGS =
      "-B -q -ntp -Dstyle.color=never -Dmaven.test.skip=true -Dmaven.javadoc.skip=true -pl leasehold-cli -am package";

  private record Result(int status, String out, String err) {}

  private Result launch(String mvnMode) throws Exception {
    return end(start(mvnMode, ""), "");
  }

  private Process start(String mvnMode, String tag) throws IOException {
    ProcessBuilder pb = new ProcessBuilder("bash", root.resolve("leasehold").toString(), "status");
    pb.environment().put("PATH", tmp.resolve("bin") + ":" + System.getenv("PATH"));
    pb.environment().put("JAVA_HOME", tmp.resolve("jdk").toString());
    pb.environment().put("STUB_MVN", mvnMode);
    pb.environment().put("STUB_LOG", log.toString());
    pb.environment().put("STUB_DIR", tmp.toString());
    pb.redirectOutput(tmp.resolve("out" + tag).toFile()).redirectError(tmp.resolve("err" + tag).toFile());
    return pb.start();
  }

  private Result end(Process p, String tag) throws Exception {
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("the launcher ended").isTrue();
    return new Result(
        p.exitValue(),
        Files.readString(tmp.resolve("out" + tag), StandardCharsets.UTF_8),
        Files.readString(tmp.resolve("err" + tag), StandardCharsets.UTF_8));
  }

  private static void executable(Path file, String text) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
  }
}
