package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A loop on its own thread that acquires and releases fresh leases, one at a time, and remembers
 * when the latest successful acquire was started and finished: "can a client take a lease right
 * now?", asked continuously.
 */
final class Probe implements AutoCloseable {

  private final LeaseBackend backend;
  private final Duration ttl;
  private final String prefix = "bench-probe-" + RunIds.next() + "-";
  private final ErrorCounts errors;
  private final Thread thread;
  private final Object lock = new Object();
  /** Start and end (System.nanoTime) of the latest successful acquire. */
  private long lastStart;
  private long lastEnd;
  private final AtomicLong successes = new AtomicLong();
  private volatile boolean stopped;

  Probe(LeaseBackend backend, Duration ttl, ErrorCounts errors) {
    this.backend = backend;
    this.ttl = ttl;
    this.errors = errors;
    this.thread = new Thread(this::loop, "bench-probe");
    thread.setDaemon(true);
    thread.start();
  }

  private void loop() {
    long n = 0;
    while (!stopped) {
      Lease lease = backend.newLease(LeaseSettings.builder(prefix + n++, "bench-probe").ttl(ttl).build());
      try {
        long start = System.nanoTime();
        boolean ok = lease.acquire().get(ttl.toMillis() * 3, TimeUnit.MILLISECONDS);
        long end = System.nanoTime();
        if (ok) {
          synchronized (lock) {
            lastStart = start;
            lastEnd = end;
            lock.notifyAll();
          }
          successes.incrementAndGet();
        } else {
          errors.record("probe acquire refused");
        }
        lease.release().get(ttl.toMillis() * 3, TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        errors.record("probe", e);
        LockSupport.parkNanos(5_000_000); // a store that fails at once is not asked 10,000 times a second
      } catch (InterruptedException e) {
        return;
      } finally {
        lease.close();
      }
    }
  }

  /**
   * Waits for a successful acquire that was started at or after {@code since} and {@return when
   * it finished}, or -1 if none finished within {@code atMost}.
   */
  long awaitSuccessStartedAfter(long since, Duration atMost) throws InterruptedException {
    long deadline = System.nanoTime() + atMost.toNanos();
    synchronized (lock) {
      while (lastStart - since < 0 || lastEnd == 0) {
        long wait = deadline - System.nanoTime();
        if (wait <= 0) {
          return -1;
        }
        TimeUnit.NANOSECONDS.timedWait(lock, wait);
      }
      return lastEnd;
    }
  }

  long successes() {
    return successes.get();
  }

  @Override
  public void close() {
    stopped = true;
    thread.interrupt();
    try {
      thread.join(ttl.toMillis() * 4);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
