package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.Jvm;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One holder process of {@code expire-storm}: a JVM of its own that acquires many leases through
 * one backend (one session per TTL, as an application process has), says {@code HELD <held>
 * <failed>} and then only keeps them alive, until the parent kills it with SIGKILL: no release, no
 * goodbye, its keep-alives simply stop. It exits by itself when its standard input closes (the
 * parent died), so it never outlives a bench run.
 */
final class StormHolderChild implements AutoCloseable {

  private static final int ATTEMPTS = 3;

  private final Process process;
  private final BufferedReader out;

  private StormHolderChild(Process process) {
    this.process = process;
    this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /**
   * Starts a holder JVM (on the bench's own Java with the servers' JVM options every Java takes,
   * {@link Jvm#baseOptions()}, with the library's log at warnings) that acquires the leases {@code <prefix>0} to {@code <prefix><count - 1>}.
   *
   * @param window acquires in flight at once
   * @param setupTimeout after this long it starts no more acquires and reports what it holds
   * @param log where its standard error goes
   */
  static StormHolderChild start(String uri, String prefix, int count, Duration ttl, int window, Duration setupTimeout, java.nio.file.Path log) {
    List<String> command = new ArrayList<>(List.of(Jvm.java()));
    command.addAll(Jvm.baseOptions());
    command.addAll(List.of(
        // After the servers' logging options, so these win: one line per lease would flood stderr.
        "-Dorg.slf4j.simpleLogger.log.io.leasehold=warn",
        "-D" + BenchMain.ENGINE_LOG_LEVEL + "=error",
        "-cp", Jvm.classPath(), StormHolderChild.class.getName(),
        uri, prefix, Integer.toString(count), Long.toString(ttl.toMillis()), Integer.toString(window),
        Long.toString(setupTimeout.toMillis())));
    ProcessBuilder b = new ProcessBuilder(command);
    b.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
    b.directory(new File(System.getProperty("user.dir")));
    try {
      return new StormHolderChild(b.start());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start a storm holder JVM", e);
    }
  }

  /**
   * What a holder reported once its setup was done.
   *
   * @param held leases it holds
   * @param failed leases it could not acquire (after 3 attempts) or did not try (setup timeout)
   * @param errors failed attempts by kind
   */
  record Report(long held, long failed, java.util.Map<String, Long> errors) {

    static Report parse(String line) {
      String[] parts = line.substring(5).split("\t");
      String[] numbers = parts[0].trim().split(" ");
      java.util.Map<String, Long> errors = new java.util.TreeMap<>();
      for (int i = 1; i < parts.length; i++) {
        int eq = parts[i].lastIndexOf('=');
        errors.put(parts[i].substring(0, eq), Long.parseLong(parts[i].substring(eq + 1)));
      }
      return new Report(Long.parseLong(numbers[0]), Long.parseLong(numbers[1]), errors);
    }
  }

  /** Waits for {@code HELD}; {@return what the child reported} */
  Report awaitHeld(Duration atMost) throws IOException, TimeoutException, InterruptedException {
    long deadline = System.nanoTime() + atMost.toNanos();
    while (System.nanoTime() - deadline < 0) {
      if (out.ready()) {
        String line = out.readLine();
        if (line == null) {
          break;
        }
        if (line.startsWith("HELD ")) {
          return Report.parse(line);
        }
      } else if (!process.isAlive()) {
        throw new IOException("a storm holder JVM exited with " + process.exitValue() + " before it reported its leases");
      } else {
        TimeUnit.MILLISECONDS.sleep(20);
      }
    }
    throw new TimeoutException("a storm holder JVM did not report its leases within " + atMost);
  }

  /** Sends SIGKILL; returns at once (see {@link #awaitGone()}). */
  void kill() {
    process.destroyForcibly();
  }

  /** Waits until the killed process is gone. */
  void awaitGone() throws InterruptedException {
    process.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }

  /**
   * The child: {@code StormHolderChild <uri> <prefix> <count> <ttl-millis> <window>
   * <setup-timeout-millis>}.
   *
   * @param args the arguments above
   */
  public static void main(String[] args) throws Exception {
    exitWhenParentGoes(System.in);
    String uri = args[0];
    String prefix = args[1];
    int count = Integer.parseInt(args[2]);
    Duration ttl = Duration.ofMillis(Long.parseLong(args[3]));
    int window = Integer.parseInt(args[4]);
    long stopStarting = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[5]));
    LeaseBackend backend = LeaseBackend.open(uri); // never closed: the parent kills this process
    Semaphore inFlight = new Semaphore(window);
    AtomicLong held = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    ErrorCounts errors = new ErrorCounts();
    for (int i = 0; i < count; i++) {
      inFlight.acquire();
      if (System.nanoTime() - stopStarting > 0) {
        inFlight.release();
        failed.addAndGet(count - i);
        break;
      }
      Lease lease = backend.newLease(LeaseSettings.builder(prefix + i, "bench-storm-holder").ttl(ttl).build());
      attempt(lease, 1, errors).whenComplete((ok, error) -> {
        (error == null && ok ? held : failed).incrementAndGet();
        inFlight.release();
      });
    }
    inFlight.acquire(window); // every acquire answered
    // What failed goes to the parent as "kind=count" pairs after the two numbers.
    StringBuilder line = new StringBuilder("HELD " + held.get() + " " + failed.get());
    errors.byKind().forEach((kind, n) -> line.append('\t').append(kind).append('=').append(n));
    System.out.println(line);
    System.out.flush();
    new CountDownLatch(1).await(); // keep them alive until killed
  }

  private static CompletableFuture<Boolean> attempt(Lease lease, int n, ErrorCounts errors) {
    return lease.acquire()
        .handle((ok, error) -> {
          if (error != null) {
            errors.record("storm holder acquire", error);
          } else if (!ok) {
            errors.record("storm holder acquire refused");
          }
          return error == null && ok || n >= ATTEMPTS
              ? CompletableFuture.completedFuture(error == null && ok)
              : attempt(lease, n + 1, errors);
        })
        .thenCompose(f -> f);
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
    }, "storm-holder-parent-watch");
    t.setDaemon(true);
    t.start();
  }
}
