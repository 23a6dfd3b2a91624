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
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The {@code acquire-release} workload: each client (its own backend instance) keeps {@code
 * window} distinct leases cycling through acquire and release, with at most {@code window}
 * operations in flight. One driver thread per client starts a cycle whenever a lease is free; the
 * cycle itself runs on the futures' callbacks. The CPU this JVM and, on a cluster the bench
 * started, the members used in the measured window is divided by the cycles it counted.
 */
final class AcquireRelease {

  /**
   * What to run.
   *
   * @param clients backend instances
   * @param window leases per client, each with one operation in flight at a time
   * @param ttl the leases' TTL
   * @param warmup time before measuring
   * @param duration time measured
   */
  record Params(int clients, int window, Duration ttl, Duration warmup, Duration duration) {}

  private final ClientFactory factory;
  private final Params params;
  private final String storeName;
  private final String workload;
  private final Optional<ManagedCluster> cluster;
  private final String runId = RunIds.next();
  private final Latency acquireLatency = new Latency();
  private final Latency releaseLatency = new Latency();
  private final LongAdder cycles = new LongAdder();
  private final ErrorCounts errors = new ErrorCounts();
  /** Per second of the measured window, when asked for; null otherwise. */
  private Timeline timeline;

  AcquireRelease(ClientFactory factory, String storeName, Params params) {
    this("acquire-release", factory, storeName, Optional.empty(), params);
  }

  /**
   * @param workload the name the result carries ({@code low-load} for one client, one in flight)
   * @param cluster the cluster whose members' CPU is measured, if the bench started it
   */
  AcquireRelease(String workload, ClientFactory factory, String storeName, Optional<ManagedCluster> cluster, Params params) {
    this.workload = workload;
    this.factory = factory;
    this.storeName = storeName;
    this.cluster = cluster;
    this.params = params;
  }

  /**
   * Also records the measured window second by second into {@code timeline}: cycles and acquire
   * latency per second, also in the result's details ({@code per_second}).
   *
   * @return this
   */
  AcquireRelease perSecond(Timeline timeline) {
    this.timeline = timeline;
    return this;
  }

  /** Runs the workload and returns its figures. */
  Result run() throws InterruptedException {
    List<LeaseBackend> backends = new ArrayList<>();
    List<Thread> drivers = new ArrayList<>();
    try {
      List<Client> clients = new ArrayList<>();
      for (int c = 0; c < params.clients(); c++) {
        LeaseBackend backend = factory.open();
        backends.add(backend);
        clients.add(new Client(backend, c));
      }
      MeasureWindow window = MeasureWindow.startingNow(params.warmup(), params.duration());
      if (timeline != null) {
        timeline.startAt(window.measureFrom());
      }
      for (Client client : clients) {
        Thread t = new Thread(() -> client.drive(window), "bench-acquire-release-" + client.index);
        t.setDaemon(true);
        drivers.add(t);
        t.start();
      }
      ResourceMeter meter = new ResourceMeter(cluster);
      MeasureWindow.sleepUntil(window.measureFrom());
      meter.start();
      MeasureWindow.sleepUntil(window.measureUntil());
      meter.stop();
      for (Thread t : drivers) {
        t.join();
      }
      for (Client client : clients) {
        client.awaitIdle(params.ttl().multipliedBy(2));
      }
      return result(window, meter);
    } finally {
      for (Thread t : drivers) {
        t.interrupt();
      }
      for (LeaseBackend b : backends) {
        b.close();
      }
    }
  }

  private Result result(MeasureWindow window, ResourceMeter meter) {
    Result r = new Result(workload, storeName)
        .param("clients", params.clients())
        .param("window", params.window())
        .param("ttl", Durations.format(params.ttl()))
        .param("warmup", Durations.format(params.warmup()))
        .param("duration", Durations.format(params.duration()));
    r.figure("cycles_per_s", "acquire+release cycles", cycles.sum() / window.seconds(), "/s");
    acquireLatency.addTo(r, "acquire", "acquire latency");
    releaseLatency.addTo(r, "release", "release latency");
    meter.addTo(r, "", cycles.sum(), "cycle");
    r.figure("errors", "errors", errors.total(), "");
    if (timeline != null) {
      timeline.addTo(r);
    }
    return r.errors(errors);
  }

  /** One client: a backend instance and its leases. */
  private final class Client {
    final int index;
    final BlockingQueue<Lease> free;
    final int size;

    Client(LeaseBackend backend, int index) {
      this.index = index;
      this.size = params.window();
      this.free = new ArrayBlockingQueue<>(size);
      for (int s = 0; s < size; s++) {
        String name = "bench-ar-" + runId + "-c" + index + "-l" + s;
        free.add(backend.newLease(LeaseSettings.builder(name, "bench-c" + index).ttl(params.ttl()).build()));
      }
    }

    void drive(MeasureWindow window) {
      try {
        while (!window.over()) {
          Lease lease = free.poll(50, TimeUnit.MILLISECONDS);
          if (lease != null) {
            cycle(lease, window);
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    private void cycle(Lease lease, MeasureWindow window) {
      long t0 = System.nanoTime();
      lease.acquire().whenComplete((acquired, error) -> {
        long t1 = System.nanoTime();
        boolean counts = window.measures(t1);
        if (error != null) {
          if (counts) {
            errors.record("acquire", error);
          }
        } else if (!acquired) {
          if (counts) {
            errors.record("acquire refused (the lease is this client's alone)");
          }
        } else if (counts) {
          acquireLatency.record(t1 - t0);
          if (timeline != null) {
            timeline.acquired(t1, t1 - t0);
          }
        }
        boolean ok = error == null && acquired;
        // Released even after a failure: the acquire may have gone through in the store.
        lease.release().whenComplete((v, releaseError) -> {
          long t2 = System.nanoTime();
          if (window.measures(t2)) {
            if (releaseError != null) {
              errors.record("release", releaseError);
            } else if (ok) {
              releaseLatency.record(t2 - t1);
              cycles.increment();
              if (timeline != null) {
                timeline.cycled(t2);
              }
            }
          }
          free.add(lease);
        });
      });
    }

    void awaitIdle(Duration atMost) throws InterruptedException {
      long deadline = System.nanoTime() + atMost.toNanos();
      while (free.size() < size && System.nanoTime() - deadline < 0) {
        TimeUnit.MILLISECONDS.sleep(5);
      }
    }
  }
}
