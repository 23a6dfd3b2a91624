package io.leasehold.testkit;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.awaitility.Awaitility;

/**
 * A lease holder in a JVM of its own, so a test can freeze it for real with {@code SIGSTOP}: every
 * thread stops, the backend's keep-alive threads included, and the clock goes on.
 *
 * <p>The child opens the backend URI, acquires the lease and then watches {@link
 * Lease#checkAlive()} in a tight loop. It reports on standard output, one event a line: {@code
 * HELD <token>} once it holds, {@code DEAD <nanos>} when {@code checkAlive()} (sampled every
 * 0.2 ms) first turns false
 * (with the last {@link System#nanoTime()} at which it was still true), and {@code LOST <kind>}
 * when {@code onLost} fires. {@code System.nanoTime()} is {@code CLOCK_MONOTONIC} on Linux, shared
 * by every process of the machine, so the parent can compare the child's instants with its own.
 */
public final class HolderProcess implements AutoCloseable {

  private final Process process;
  private final List<String> lines = new ArrayList<>();
  private final StringBuilder errors = new StringBuilder();

  private HolderProcess(Process process) {
    this.process = process;
    daemon("holder-stdout", () -> collect(new BufferedReader(process.inputReader(StandardCharsets.UTF_8)), true));
    daemon("holder-stderr", () -> collect(new BufferedReader(process.errorReader(StandardCharsets.UTF_8)), false));
  }

  /**
   * Starts a child JVM on this JVM's class path that acquires {@code lease} on {@code backendUri}
   * with the testkit's settings for {@code ttl}.
   *
   * @param backendUri the backend to open in the child
   * @param lease the lease name
   * @param owner the owner name
   * @param ttl the lease's TTL
   * @return the running child
   */
  public static HolderProcess start(String backendUri, String lease, String owner, Duration ttl) {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder builder =
        new ProcessBuilder(
            java,
            "-cp",
            System.getProperty("java.class.path"),
            HolderProcess.class.getName(),
            backendUri,
            lease,
            owner,
            Long.toString(ttl.toMillis()));
    builder.directory(new File(System.getProperty("user.dir")));
    try {
      return new HolderProcess(builder.start());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start a holder JVM", e);
    }
  }

  /**
   * Waits for the child to hold the lease.
   *
   * @param timeout how long to wait
   * @return the child's fencing token
   */
  public long awaitHeld(Duration timeout) {
    return Long.parseLong(awaitEvent("HELD", timeout));
  }

  /**
   * Waits for the child to see {@code checkAlive()} turn false.
   *
   * @param timeout how long to wait
   * @return the last {@link System#nanoTime()} at which the child's {@code checkAlive()} said true
   */
  public long awaitDead(Duration timeout) {
    return Long.parseLong(awaitEvent("DEAD", timeout));
  }

  /**
   * Waits for the child's {@code onLost}.
   *
   * @param timeout how long to wait
   * @return the loss kind the child reported
   */
  public String awaitLost(Duration timeout) {
    return awaitEvent("LOST", timeout);
  }

  /** Freezes every thread of the child ({@code SIGSTOP}). */
  public void suspend() {
    signal("STOP");
  }

  /** Lets the frozen child run again ({@code SIGCONT}). */
  public void resume() {
    signal("CONT");
  }

  /** Kills the child at once ({@code SIGKILL}) and waits for it to be gone. */
  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private String awaitEvent(String event, Duration timeout) {
    String prefix = event + " ";
    return Awaitility.await("holder process to report " + event)
        .atMost(timeout)
        .pollInterval(Duration.ofMillis(10))
        .failFast("holder process exited; its stderr: " + errors(), () -> !process.isAlive())
        .until(() -> find(prefix), Optional::isPresent)
        .orElseThrow();
  }

  private Optional<String> find(String prefix) {
    synchronized (lines) {
      return lines.stream()
          .filter(l -> l.startsWith(prefix))
          .map(l -> l.substring(prefix.length()))
          .findFirst();
    }
  }

  private String errors() {
    synchronized (errors) {
      return errors.toString();
    }
  }

  private void signal(String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run kill", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while signalling the holder", e);
    }
  }

  private void collect(BufferedReader reader, boolean events) {
    try (reader) {
      for (String line = reader.readLine(); line != null; line = reader.readLine()) {
        if (events) {
          synchronized (lines) {
            lines.add(line);
          }
        } else {
          synchronized (errors) {
            errors.append(line).append('\n');
          }
        }
      }
    } catch (IOException ignored) {
      // the child is gone
    }
  }

  private static void daemon(String name, Runnable body) {
    Thread thread = new Thread(body, name);
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * The child's side: {@code HolderProcess <backend-uri> <lease> <owner> <ttl-millis>}.
   *
   * @param args the arguments above
   * @throws Exception when the lease cannot be acquired; the parent sees the stack trace
   */
  public static void main(String[] args) throws Exception {
    Duration ttl = Duration.ofMillis(Long.parseLong(args[3]));
    try (LeaseBackend backend = LeaseBackend.open(args[0]);
        Lease lease = backend.newLease(SuiteSettings.forTtl(args[1], args[2], ttl).build())) {
      lease.onLost(lost -> emit("LOST " + lost.kind()));
      while (!lease.acquire().get(ttl.toMillis() * 10, TimeUnit.MILLISECONDS)) {
        Thread.onSpinWait(); // someone else holds it: ask again
      }
      emit("HELD " + lease.fencingToken().orElseThrow());
      // Read the clock first, then ask: a true answer covers the instant read before it.
      long lastAlive = System.nanoTime();
      while (true) {
        long now = System.nanoTime();
        if (!lease.checkAlive()) {
          break;
        }
        lastAlive = now;
        LockSupport.parkNanos(200_000); // sample often without taking a whole core
      }
      emit("DEAD " + lastAlive);
      // Stay up so the parent can read LOST; it kills this process.
      new java.util.concurrent.CountDownLatch(1).await();
    }
  }

  private static synchronized void emit(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
