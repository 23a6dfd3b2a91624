package io.leasehold.server.http;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Headless Chromium (Debian's {@code chromium} package) driven from its command line: loads a
 * page, lets its scripts run (a virtual-time budget: timers and fetches complete, then it stops),
 * and prints the resulting DOM or saves a screenshot. No WebDriver needed.
 */
public final class Chromium {

  private static final List<String> BINARIES = List.of("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome");

  private final String binary;
  private final Path profile;

  Chromium(Path workDir) throws IOException {
    this.binary =
        BINARIES.stream()
            .filter(b -> Files.isExecutable(Path.of(b)))
            .findFirst()
            .orElseThrow(
                () -> new IllegalStateException(
                    "headless Chromium is needed for the status page's browser test and none of " + BINARIES
                        + " exists: run ./run-tests (it installs Debian's chromium when missing) or"
                        + " 'apt-get install -y chromium' as root"));
    Files.createDirectories(workDir);
    this.profile = Files.createTempDirectory(workDir, "profile-");
  }

  /** {@return the page's DOM after its scripts ran for a few (virtual) seconds} */
  String dumpDom(String url) throws IOException, InterruptedException {
    return run(List.of("--dump-dom", url));
  }

  /** Saves a screenshot of the page after its scripts ran; returns where. */
  Path screenshot(String url, Path file) throws IOException, InterruptedException {
    Files.deleteIfExists(file);
    run(List.of("--screenshot=" + file.toAbsolutePath(), "--window-size=1280,900", url));
    return file;
  }

  private String run(List<String> args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(
        binary,
        "--headless",
        "--no-sandbox", // the tests may run as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--user-data-dir=" + profile.toAbsolutePath(),
        "--virtual-time-budget=3000"));
    command.addAll(args);
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
    if (!p.waitFor(90, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException("chromium did not finish within 90 s: " + command);
    }
    return out.join();
  }

  private static String read(InputStream in) {
    try (in) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }
}
