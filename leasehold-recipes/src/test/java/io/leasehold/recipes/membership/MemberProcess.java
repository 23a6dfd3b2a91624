package io.leasehold.recipes.membership;

import io.leasehold.LeaseBackend;
import io.leasehold.testkit.SuiteSettings;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A group member in a JVM of its own, so that a test can kill it for real ({@code kill -9}): it
 * joins, prints {@code JOINED <slot> <token>} and stays until killed.
 */
final class MemberProcess implements AutoCloseable {

  private final Process process;

  private MemberProcess(Process process) {
    this.process = process;
  }

  static MemberProcess start(String uri, String group, String id, Duration ttl) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder builder =
        new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), MemberProcess.class.getName(),
            uri, group, id, Long.toString(ttl.toMillis()));
    builder.directory(new File(System.getProperty("user.dir")));
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    try {
      return new MemberProcess(builder.start());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start a member JVM", e);
    }
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** {@code kill -9}: no release, no handler; the store's TTL cleans up. */
  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The child's side: {@code MemberProcess <backend-uri> <group> <id> <ttl-millis>}.
   *
   * @param args the arguments above
   * @throws Exception when it cannot join; the parent sees the stack trace
   */
  public static void main(String[] args) throws Exception {
    Duration ttl = Duration.ofMillis(Long.parseLong(args[3]));
    try (LeaseBackend backend = LeaseBackend.open(args[0])) {
      Member me = null;
      while (me == null) {
        try {
          me = Membership.join(backend, args[1], args[2])
              .data(Map.of("address", args[2] + ":8080"))
              .maxMembers(8)
              .settings(b -> SuiteSettings.forTtl(b.build().name(), args[2], ttl))
              .join()
              .get(ttl.toMillis() * 10, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
          System.err.println("join failed, trying again: " + e.getCause()); // a cold JVM's first calls
        }
      }
      System.out.println("JOINED " + me.slot() + " " + me.token());
      new CountDownLatch(1).await();
    }
  }
}
