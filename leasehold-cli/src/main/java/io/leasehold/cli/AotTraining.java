package io.leasehold.cli;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.server.LocalCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * The training run behind the servers' ahead-of-time cache (JDK 24+, {@code -XX:AOTCacheOutput}):
 * the work a core node does in its first minutes, in one JVM, so that the cache records the
 * classes it loads and links and the profiles of its hot methods. Not a command of the tool: the
 * {@code leasehold} launcher runs it as {@code java -XX:AOTCacheOutput=FILE ... -cp JAR
 * io.leasehold.cli.AotTraining [DURATION]} when it makes the cache (docs/running-the-core.md).
 *
 * <p>It starts a 3-node core on loopback (free ports, a temporary directory deleted afterwards) in
 * this process, as {@code leasehold dev} does, and runs two loads against it through the client
 * library for {@code DURATION} (default 15 s) each, half the time each: four clients cycling
 * sixteen leases each through acquire and release (writes, the batching leader, the apply thread,
 * keep-alives), then four clients contending for one lease (refused acquires, hand-overs).
 */
public final class AotTraining {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int CLIENTS = 4;
  private static final int WINDOW = 16;

  private AotTraining() {}

  /**
   * Runs the training load and exits 0, or 1 if the cluster could not start.
   *
   * @param args an optional duration ({@code 15s})
   * @throws Exception if the load is interrupted
   */
  public static void main(String[] args) throws Exception {
    Duration duration = args.length > 0 ? Durations.parse(args[0]) : Duration.ofSeconds(15);
    Path root = Files.createTempDirectory("leasehold-aot-training-");
    long cycles;
    long handovers;
    try (LocalCluster cluster = LocalCluster.start(3, 0, root, UnaryOperator.identity())) {
      List<LeaseBackend> backends = new ArrayList<>();
      try {
        for (int c = 0; c < CLIENTS; c++) {
          backends.add(LeaseBackend.open(cluster.uri()));
        }
        cycles = cycles(backends, duration.dividedBy(2));
        handovers = contend(backends, duration.dividedBy(2));
      } finally {
        backends.forEach(LeaseBackend::close);
      }
    } finally {
      delete(root);
    }
    System.err.printf("leasehold AOT training: %d acquire/release cycles, %d hand-overs in %s%n",
        cycles, handovers, Durations.format(duration));
    System.exit(0);
  }

  /** Each client keeps {@link #WINDOW} leases cycling through acquire and release until the end. */
  private static long cycles(List<LeaseBackend> backends, Duration duration) throws InterruptedException {
    long end = System.nanoTime() + duration.toNanos();
    AtomicLong done = new AtomicLong();
    CountDownLatch stopped = new CountDownLatch(backends.size() * WINDOW);
    for (int c = 0; c < backends.size(); c++) {
      for (int l = 0; l < WINDOW; l++) {
        Lease lease = backends.get(c).newLease(
            LeaseSettings.builder("aot-training-c" + c + "-l" + l, "aot-training-c" + c).ttl(TTL).build());
        cycle(lease, end, done, stopped);
      }
    }
    stopped.await(duration.toMillis() + 30_000, TimeUnit.MILLISECONDS);
    return done.get();
  }

  private static void cycle(Lease lease, long end, AtomicLong done, CountDownLatch stopped) {
    if (System.nanoTime() - end >= 0) {
      stopped.countDown();
      return;
    }
    lease.acquire()
        .handle((acquired, error) -> null)
        .thenCompose(x -> lease.release())
        .whenComplete((v, error) -> {
          done.incrementAndGet();
          cycle(lease, end, done, stopped);
        });
  }

  /** The clients ask for one lease; a holder releases at once and waits until another took it. */
  private static long contend(List<LeaseBackend> backends, Duration duration) throws InterruptedException {
    long end = System.nanoTime() + duration.toNanos();
    List<Lease> leases = new ArrayList<>();
    for (int c = 0; c < backends.size(); c++) {
      leases.add(backends.get(c).newLease(
          LeaseSettings.builder("aot-training-contended", "aot-training-c" + c).ttl(TTL).acquireRetries(0).build()));
    }
    AtomicLong handovers = new AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (Lease lease : leases) {
      Thread t = new Thread(() -> {
        long seen = -1;
        while (System.nanoTime() - end < 0) {
          try {
            if (lease.acquire().get(5, TimeUnit.SECONDS)) {
              handovers.incrementAndGet();
              lease.release().get(5, TimeUnit.SECONDS);
              seen = handovers.get();
              while (handovers.get() == seen && System.nanoTime() - end < 0) {
                TimeUnit.MILLISECONDS.sleep(1);
              }
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          } catch (Exception e) {
            // a timeout or a refused write under load: the training goes on
          }
        }
      }, "aot-training-contender");
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(duration.toMillis() + 30_000);
    }
    return handovers.get();
  }

  private static void delete(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
