package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A lease holder in a JVM of its own, for {@code failover --kill holder}: the parent kills it with
 * {@code SIGKILL} and measures how long until another client takes the lease. The child prints
 * {@code HELD <token>} once it holds the lease, and exits by itself when its standard input closes
 * (the parent died), so no holder outlives a bench run.
 */
final class HolderChild implements AutoCloseable {

  private final Process process;
  private final BufferedReader out;

  private HolderChild(Process process) {
    this.process = process;
    this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /** Starts a child JVM on this JVM's class path that acquires {@code lease} on {@code uri}. */
  static HolderChild start(String uri, String lease, Duration ttl) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder b = new ProcessBuilder(
        java, "-Xmx256m", "-cp", System.getProperty("java.class.path"), HolderChild.class.getName(),
        uri, lease, Long.toString(ttl.toMillis()));
    b.redirectError(ProcessBuilder.Redirect.INHERIT);
    b.directory(new File(System.getProperty("user.dir")));
    try {
      return new HolderChild(b.start());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start a holder JVM", e);
    }
  }

  /** Waits for {@code HELD}; {@return the child's fencing token} */
  long awaitHeld(Duration atMost) throws IOException, TimeoutException, InterruptedException {
    long deadline = System.nanoTime() + atMost.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (out.ready()) {
        String line = out.readLine();
        if (line == null) {
          break;
        }
        if (line.startsWith("HELD ")) {
          return Long.parseLong(line.substring(5).trim());
        }
      } else if (!process.isAlive()) {
        throw new IOException("the holder JVM exited with " + process.exitValue() + " before it held the lease");
      } else {
        TimeUnit.MILLISECONDS.sleep(5);
      }
    }
    throw new TimeoutException("the holder JVM did not hold the lease within " + atMost);
  }

  /** Kills the child with {@code SIGKILL} and waits until it is gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }

  /**
   * The child: {@code HolderChild <uri> <lease> <ttl-millis>}.
   *
   * @param args the arguments above
   */
  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.log.io.leasehold", "warn");
    exitWhenParentGoes(System.in);
    Duration ttl = Duration.ofMillis(Long.parseLong(args[2]));
    try (LeaseBackend backend = LeaseBackend.open(args[0]);
        Lease lease = backend.newLease(LeaseSettings.builder(args[1], "bench-holder-child").ttl(ttl).build())) {
      while (!acquired(lease, ttl)) {
        TimeUnit.MILLISECONDS.sleep(10);
      }
      System.out.println("HELD " + lease.fencingToken().orElseThrow());
      System.out.flush();
      new CountDownLatch(1).await(); // hold until killed
    }
  }

  private static boolean acquired(Lease lease, Duration ttl) throws InterruptedException {
    try {
      return lease.acquire().get(ttl.toMillis() * 3, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      System.err.println("holder child: acquire failed, trying again: " + e);
      return false;
    }
  }

  private static void exitWhenParentGoes(InputStream in) {
    Thread t = new Thread(() -> {
      try {
        while (in.read() >= 0) {
          // nothing is sent; EOF means the parent is gone
        }
      } catch (IOException ignored) {
        // the same
      }
      Runtime.getRuntime().halt(3);
    }, "holder-child-parent-watch");
    t.setDaemon(true);
    t.start();
  }
}
