package io.leasehold.bench;

import io.leasehold.cli.Durations;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.ManagedCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The {@code contended} workload: N clients (separate backend instances, so separate holders) on
 * one lease. Each asks for it again as soon as it was refused; the holder keeps it for {@code
 * hold}, releases it, and does not ask again until another client has taken it, so every tenure is
 * a handover. Measures handovers per second and the gap from the holder's {@code release()} call
 * to the next holder's {@code acquire()} completing {@code true}.
 */
final class Contended {

  /**
   * What to run.
   *
   * @param clients contending backend instances, at least 2
   * @param ttl the lease's TTL
   * @param hold how long each holder keeps the lease
   * @param warmup time before measuring
   * @param duration time measured
   */
  record Params(int clients, Duration ttl, Duration hold, Duration warmup, Duration duration) {}

  private final ClientFactory factory;
  private final String storeName;
  private final Params params;
  private final Optional<ManagedCluster> cluster;
  private final String leaseName = "bench-contended-" + RunIds.next();
  private final Latency gap = new Latency();
  private final LongAdder handovers = new LongAdder();
  private final LongAdder attempts = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder tokenRegressions = new LongAdder();
  private final ErrorCounts errors = new ErrorCounts();
  /** Tenures started, by anyone; a client that released waits for this to move. */
  private final AtomicLong tenures = new AtomicLong();
  /** When the last holder called release(), on System.nanoTime(); 0 before the first. */
  private final AtomicLong releasedAt = new AtomicLong();
  private final AtomicLong lastToken = new AtomicLong(Long.MIN_VALUE);

  Contended(ClientFactory factory, String storeName, Params params) {
    this(factory, storeName, Optional.empty(), params);
  }

  /** @param cluster the cluster whose members' CPU is measured, if the bench started it */
  Contended(ClientFactory factory, String storeName, Optional<ManagedCluster> cluster, Params params) {
    this.factory = factory;
    this.storeName = storeName;
    this.cluster = cluster;
    this.params = params;
  }

  Result run() throws InterruptedException {
    List<LeaseBackend> backends = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    try {
      List<Lease> leases = new ArrayList<>();
      for (int c = 0; c < params.clients(); c++) {
        LeaseBackend b = factory.open();
        backends.add(b);
        // One attempt per acquire(): a refused client asks again at once, on its own loop.
        leases.add(b.newLease(LeaseSettings.builder(leaseName, "bench-c" + c).ttl(params.ttl()).acquireRetries(0).build()));
      }
      MeasureWindow window = MeasureWindow.startingNow(params.warmup(), params.duration());
      for (int c = 0; c < leases.size(); c++) {
        Lease lease = leases.get(c);
        Thread t = new Thread(() -> contend(lease, window), "bench-contended-" + c);
        t.setDaemon(true);
        threads.add(t);
        t.start();
      }
      ResourceMeter meter = new ResourceMeter(cluster);
      MeasureWindow.sleepUntil(window.measureFrom());
      meter.start();
      MeasureWindow.sleepUntil(window.measureUntil());
      meter.stop();
      for (Thread t : threads) {
        t.join();
      }
      return result(window, meter);
    } finally {
      for (Thread t : threads) {
        t.interrupt();
      }
      for (LeaseBackend b : backends) {
        b.close();
      }
    }
  }

  private void contend(Lease lease, MeasureWindow window) {
    long waitFor = -1; // the tenure count this client saw when it released
    long releasedByMe = 0;
    long timeoutMs = params.ttl().toMillis() * 2;
    while (!window.over() && !Thread.currentThread().isInterrupted()) {
      // Let the others take it first, unless none has for a whole TTL (they may all be failing).
      if (waitFor >= 0 && tenures.get() == waitFor && System.nanoTime() - releasedByMe < params.ttl().toNanos()) {
        LockSupport.parkNanos(100_000);
        continue;
      }
      waitFor = -1;
      boolean acquired;
      try {
        acquired = lease.acquire().get(timeoutMs, TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        if (window.measures(System.nanoTime())) {
          errors.record("acquire", e);
        }
        continue;
      } catch (InterruptedException e) {
        return;
      }
      long now = System.nanoTime();
      boolean counts = window.measures(now);
      if (counts) {
        attempts.increment();
      }
      if (!acquired) {
        if (counts) {
          refused.increment();
        }
        continue;
      }
      tenures.incrementAndGet();
      long released = releasedAt.get();
      if (counts) {
        handovers.increment();
        if (released != 0) {
          gap.record(now - released);
        }
      }
      OptionalLong token = lease.fencingToken();
      if (token.isPresent()) {
        long previous = lastToken.getAndAccumulate(token.getAsLong(), Math::max);
        if (token.getAsLong() <= previous && counts) {
          tokenRegressions.increment();
        }
      }
      LockSupport.parkNanos(params.hold().toNanos());
      waitFor = tenures.get();
      releasedByMe = System.nanoTime();
      releasedAt.set(releasedByMe);
      try {
        lease.release().get(timeoutMs, TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        if (window.measures(System.nanoTime())) {
          errors.record("release", e);
        }
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private Result result(MeasureWindow window, ResourceMeter meter) {
    Result r = new Result("contended", storeName)
        .param("clients", params.clients())
        .param("ttl", Durations.format(params.ttl()))
        .param("hold", Durations.format(params.hold()))
        .param("warmup", Durations.format(params.warmup()))
        .param("duration", Durations.format(params.duration()));
    r.figure("handovers_per_s", "handovers", handovers.sum() / window.seconds(), "/s");
    r.figure("acquire_attempts_per_s", "acquire attempts answered (all clients)", attempts.sum() / window.seconds(), "/s");
    r.figure("refused", "acquires refused (held by another)", refused.sum(), "");
    Latency.addTo(r, "handover_gap", "release -> next acquire", gap.histogram());
    r.figure("token_regressions", "fencing tokens not increasing (must be 0)", tokenRegressions.sum(), "");
    meter.addTo(r, "", handovers.sum(), "handover");
    r.figure("errors", "errors", errors.total(), "");
    return r.errors(errors);
  }
}
