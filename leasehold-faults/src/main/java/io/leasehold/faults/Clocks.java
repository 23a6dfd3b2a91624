package io.leasehold.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The harness's side of {@link ClockSkewAgent}: the agent jar, the options that put it into a
 * child JVM, and the rate files through which the nemesis changes a child's clock rate.
 */
final class Clocks {

  /** What a client or core node JVM patches: every Leasehold class but the harness's own. */
  static final String LEASEHOLD = "io/leasehold/";
  /** What a ZooKeeper server JVM patches: ZooKeeper's {@code Time}, which session expiry runs on. */
  static final String ZOOKEEPER = "org/apache/zookeeper/";

  private static final String NEVER = "io/leasehold/faults/";

  private final Path dir;
  private final Path jar;

  Clocks(Path dir) {
    this.dir = dir;
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
    this.jar = ClockSkewAgent.writeJar(dir.resolve("clock-agent.jar"));
  }

  /**
   * The JVM options that let the nemesis skew process {@code name}'s clock.
   *
   * @param name the process's name in histories (n1, c2, z3)
   * @param prefixes internal class-name prefixes whose {@code System.nanoTime()} calls are redirected
   * @return the options, to go before the main class
   */
  List<String> jvmOptions(String name, String prefixes) {
    return List.of("-javaagent:" + jar.toAbsolutePath() + "=" + file(name).toAbsolutePath() + "|" + prefixes + "|" + NEVER);
  }

  /**
   * Sets process {@code name}'s clock rate and waits (up to 3 s) until the process confirms it.
   *
   * @param name the process
   * @param rate the new rate, 1.0 for the real clock
   * @return whether the process adopted it and its agent redirected at least one call site
   */
  boolean set(String name, double rate) {
    String text = String.format(Locale.ROOT, "%.6f", rate);
    Path file = file(name);
    Path tmp = dir.resolve(name + ".tmp");
    Path ack = dir.resolve(name + ".rate.ack");
    try {
      Files.deleteIfExists(ack);
      Files.writeString(tmp, text + "\n", StandardCharsets.UTF_8);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      while (System.nanoTime() - deadline < 0) {
        if (Files.exists(ack)) {
          String[] a = Files.readString(ack, StandardCharsets.UTF_8).strip().split(" ");
          if (a.length == 2 && a[0].equals(text)) {
            return Integer.parseInt(a[1]) > 0;
          }
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      return false;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private Path file(String name) {
    return dir.resolve(name + ".rate");
  }
}
