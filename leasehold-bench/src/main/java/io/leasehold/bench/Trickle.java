package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * A steady trickle of acquires from one client: every {@code interval} it starts an acquire of a
 * fresh lease, whether or not the earlier ones have been answered (open loop, so a store that
 * stalls shows the stall in every acquire it holds up, not in one), and releases each lease once
 * acquired. Remembers when each acquire started and how long it took to be answered.
 */
final class Trickle implements AutoCloseable {

  /** One acquire: when it started (System.nanoTime), how long until answered, and whether it got the lease. */
  record Sample(long startNanos, long latencyNanos, boolean acquired) {}

  /**
   * More outstanding than this (2 s of acquires at the default interval) means the store does not
   * answer at all; no point piling on, and {@link ExpireStorm} needs the trickle's share of the
   * store's count small beside a holder's leases. A trickle may be given a lower cap.
   */
  static final int MAX_IN_FLIGHT = 100;

  /** The trickle's leases' TTL: within the bench's ZooKeeper session timeout (30 s). */
  static final Duration TTL = Duration.ofSeconds(20);

  /** How long an acquire waits for its answer: inside the lease's safe window (TTL × 0.89). */
  static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(15);

  private final LeaseBackend backend;
  private final long intervalNanos;
  private final String prefix = "bench-trickle-" + RunIds.next() + "-";
  private final ErrorCounts errors;
  private final int maxInFlight;
  private final List<Sample> samples = new ArrayList<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  /** Acquires started whose release has not completed: an upper bound of this trickle's leases in the store. */
  private final AtomicInteger outstanding = new AtomicInteger();
  private final AtomicInteger skipped = new AtomicInteger();
  private final Thread thread;
  private volatile boolean stopped;

  /**
   * @param maxInFlight at most this many acquires outstanding (started, release not yet completed);
   *     a tick that finds as many is skipped
   */
  Trickle(LeaseBackend backend, Duration interval, int maxInFlight, ErrorCounts errors) {
    this.backend = backend;
    this.maxInFlight = maxInFlight;
    this.intervalNanos = interval.toNanos();
    this.errors = errors;
    this.thread = new Thread(this::loop, "bench-trickle");
    thread.setDaemon(true);
    thread.start();
  }

  private void loop() {
    long next = System.nanoTime();
    long n = 0;
    while (!stopped) {
      long wait = next - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
        continue;
      }
      next += intervalNanos;
      // Outstanding, not merely unanswered: an acquired lease whose release is slow is still in the store.
      if (outstanding.get() >= maxInFlight) {
        skipped.incrementAndGet();
        continue;
      }
      start(prefix + n++);
    }
  }

  private void start(String name) {
    Lease lease = backend.newLease(LeaseSettings.builder(name, "bench-trickle")
        .ttl(TTL).operationTimeout(OPERATION_TIMEOUT).acquireRetries(0).build());
    inFlight.incrementAndGet();
    outstanding.incrementAndGet();
    long t0 = System.nanoTime();
    lease.acquire().whenComplete((ok, error) -> {
      long latency = System.nanoTime() - t0;
      inFlight.decrementAndGet();
      boolean acquired = error == null && ok;
      synchronized (samples) {
        samples.add(new Sample(t0, latency, acquired));
      }
      if (error != null) {
        errors.record("trickle acquire", error);
      } else if (!ok) {
        errors.record("trickle acquire refused (a fresh lease)");
      }
      // Released even after a failure: the acquire may have gone through in the store.
      lease.release().whenComplete((v, e) -> {
        outstanding.decrementAndGet();
        lease.close();
      });
    });
  }

  /** {@return acquires started whose release has not completed yet} */
  int outstanding() {
    return outstanding.get();
  }

  /** {@return the answered acquires that started in [{@code from}, {@code to}) on System.nanoTime} */
  List<Sample> startedBetween(long from, long to) {
    synchronized (samples) {
      return samples.stream().filter(s -> s.startNanos - from >= 0 && s.startNanos - to < 0).toList();
    }
  }

  /** {@return the latencies of {@code samples} in a histogram (ns)} */
  static Histogram histogram(List<Sample> samples) {
    Histogram h = new Histogram(3);
    for (Sample s : samples) {
      h.recordValue(Math.max(0, s.latencyNanos));
    }
    return h;
  }

  int skipped() {
    return skipped.get();
  }

  /** Starts no more acquires and waits up to {@code atMost} for those in flight to be answered. */
  void stop(Duration atMost) throws InterruptedException {
    stopped = true;
    thread.join();
    long deadline = System.nanoTime() + atMost.toNanos();
    while (inFlight.get() > 0 && System.nanoTime() - deadline < 0) {
      TimeUnit.MILLISECONDS.sleep(10);
    }
  }

  /** {@return acquires started but never answered} */
  int unanswered() {
    return inFlight.get();
  }

  @Override
  public void close() {
    stopped = true;
    thread.interrupt();
  }
}
