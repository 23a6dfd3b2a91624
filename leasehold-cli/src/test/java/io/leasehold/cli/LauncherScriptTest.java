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
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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

  /**
   * A JDK 25: a "training run" ({@code -XX:AOTCacheOutput=FILE}) writes FILE and counts itself in
   * {@code trainings}; anything else prints how it was called.
   */
  private static final String STUB_JAVA_25 =
      """
      #!/usr/bin/env bash
      for a in "$@"; do
        case "$a" in
          -XX:AOTCacheOutput=*) echo trained >> "$STUB_DIR/trainings"; echo cache > "${a#-XX:AOTCacheOutput=}"; exit 0 ;;
        esac
      done
      echo "ran25 $*"
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
    executable(tmp.resolve("jdks/jdk-25/bin/java"), STUB_JAVA_25);
    Files.writeString(tmp.resolve("jdks/jdk-25/release"), "JAVA_VERSION=\"25.0.1\"\n");
    Files.createDirectories(tmp.resolve("no-jdks"));
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

  /**
   * With a JDK 25 installed, {@code server} runs on it (here with compact object headers) and an AOT cache
   * that one training run made for the jar; a second start trains nothing, and a rebuilt jar gets a
   * new cache. The tool's other commands stay on the first Java.
   */
  @Test
  void theServerRunsOnJdk25WithACacheTrainedOncePerBuild() throws Exception {
    Map<String, String> jdk25 = Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("jdks").toString(), "LEASEHOLD_SERVER_JDK", "auto", "LEASEHOLD_COMPACT_HEADERS", "on");

    Result first = launch("ok", jdk25, "server", "--id", "n1");
    Result second = launch("ok", jdk25, "server", "--id", "n1");

    assertThat(first.status).as("stderr: %s", first.err).isZero();
    assertThat(first.out).startsWith("ran25 ").contains("-XX:+UseCompactObjectHeaders")
        .contains("-XX:AOTCache=" + root.resolve("leasehold-cli/target/launcher/aot/leasehold-jdk25.0.1-coh-on.aot"))
        .endsWith("-jar " + root.resolve("leasehold-cli/target/launcher/leasehold.jar") + " server --id n1\n");
    assertThat(first.err).contains("training the server JVMs' AOT cache").contains("server JVMs on JDK 25.0.1");
    assertThat(second.out).isEqualTo(first.out);
    assertThat(Files.readAllLines(tmp.resolve("trainings"))).hasSize(1);

    Files.setLastModifiedTime(root.resolve("leasehold-cli/src/main/java/A.java"), FileTime.from(Instant.now().plusSeconds(5)));
    Result rebuilt = launch("ok", jdk25, "server");
    assertThat(rebuilt.out).contains("-XX:AOTCache=");
    assertThat(Files.readAllLines(tmp.resolve("trainings"))).hasSize(2);

    assertThat(launch("ok", jdk25, "status").out).startsWith("ran " + root.resolve("leasehold-cli/target/launcher/leasehold.jar"));
  }

  /** {@code dev} uses a cache it finds but never trains one: its first start stays as fast as before. */
  @Test
  void devRunsOnJdk25ButDoesNotTrain() throws Exception {
    Map<String, String> jdk25 = Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("jdks").toString(), "LEASEHOLD_SERVER_JDK", "auto");

    Result dev = launch("ok", jdk25, "dev");

    assertThat(dev.status).as("stderr: %s", dev.err).isZero();
    assertThat(dev.out).startsWith("ran25 ").doesNotContain("AOTCache").doesNotContain("UseCompactObjectHeaders");
    assertThat(dev.err).contains("AOT cache none");
    assertThat(tmp.resolve("trainings")).doesNotExist();

    launch("ok", jdk25, "server");
    assertThat(launch("ok", jdk25, "dev").out).contains("-XX:AOTCache=");
  }

  /**
   * By default (none), without a JDK 25 under auto, or with LEASEHOLD_SERVER_JDK=none, the server
   * runs on the first Java exactly as before.
   */
  @Test
  void withoutJdk25OrWithNoneTheServerRunsAsBefore() throws Exception {
    String jar = root.resolve("leasehold-cli/target/launcher/leasehold.jar").toString();
    Result none = launch("ok", Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("no-jdks").toString()), "server");
    Result off = launch("ok", Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("jdks").toString(), "LEASEHOLD_SERVER_JDK", "none"), "server");
    Result byDefault = launch("ok", Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("jdks").toString()), "server");

    assertThat(byDefault.out).as("JDK 25 is opt-in").isEqualTo("ran " + jar + "\n");
    assertThat(none.out).isEqualTo("ran " + jar + "\n");
    assertThat(none.err).doesNotContain("server JVMs");
    assertThat(off.out).isEqualTo("ran " + jar + "\n");
    assertThat(off.err).isEqualTo("what the command said on its standard error\n");
    assertThat(tmp.resolve("trainings")).doesNotExist();
  }

  /** A bad setting is refused with its name and what it may be, and nothing runs. */
  @Test
  void badServerJvmSettingsAreRefusedByName() throws Exception {
    Result aot = launch("ok", Map.of("LEASEHOLD_JDK_SEARCH", tmp.resolve("jdks").toString(), "LEASEHOLD_AOT", "sometimes"), "server");
    Result old = launch("ok", Map.of("LEASEHOLD_SERVER_JDK", tmp.resolve("jdk").toString()), "server");

    assertThat(aot.status).isEqualTo(1);
    assertThat(aot.err).contains("LEASEHOLD_AOT=sometimes: must be auto, train or off");
    assertThat(aot.out).isEmpty();
    assertThat(old.status).isEqualTo(1);
    assertThat(old.err).contains("LEASEHOLD_SERVER_JDK=" + tmp.resolve("jdk")).contains("must be 25 or newer");
    assertThat(old.out).isEmpty();
  }

  private static final String MVN_ARGS =
      "-B -q -ntp -Dstyle.color=never -Dmaven.test.skip=true -Dmaven.javadoc.skip=true -pl leasehold-cli -am package";

  private record Result(int status, String out, String err) {}

  private Result launch(String mvnMode) throws Exception {
    return end(start(mvnMode, ""), "");
  }

  private Result launch(String mvnMode, Map<String, String> env, String... args) throws Exception {
    return end(start(mvnMode, "", env, args), "");
  }

  private Process start(String mvnMode, String tag) throws IOException {
    return start(mvnMode, tag, Map.of(), "status");
  }

  private Process start(String mvnMode, String tag, Map<String, String> env, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of("bash", root.resolve("leasehold").toString()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    // No JDK 25 unless a test gives one: the machine's /usr/lib/jvm may hold one.
    pb.environment().put("LEASEHOLD_JDK_SEARCH", tmp.resolve("no-jdks").toString());
    pb.environment().remove("LEASEHOLD_SERVER_JDK");
    pb.environment().remove("LEASEHOLD_AOT");
    pb.environment().remove("LEASEHOLD_COMPACT_HEADERS");
    pb.environment().putAll(env);
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
