package io.leasehold.bench;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.cli.Durations;
import io.leasehold.recipes.election.LeaderContext;
import io.leasehold.recipes.election.LeaderElection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The {@code waiters} workload: N processes (separate backend instances) wait for one lease the
 * way an application does, each with a {@link LeaderElection}; whoever leads keeps the lease for
 * {@code hold}, then its work returns, the election releases, and a waiter takes over. Measures
 * the gap from the leader's work returning to the next leader's work starting, with the waiters
 * either <b>observing</b> the lease (told when it frees, they ask again within a small jitter: how
 * {@code LeaderElection.observing(backend)} and {@code leasehold run --wait} wait) or
 * <b>polling</b> with the election's backoff (how both waited before). Same build, same store,
 * same load: the difference is the waiting alone.
 */
final class Waiters {

  /**
   * What to run.
   *
   * @param waiters processes waiting for the lease, at least 2
   * @param ttl the lease's TTL (the polling backoff grows up to its heartbeat interval, TTL / 3)
   * @param hold how long each leader keeps the lease
   * @param observe whether the waiters observe the lease, or poll it
   * @param warmup time before measuring
   * @param duration time measured
   */
  record Params(int waiters, Duration ttl, Duration hold, boolean observe, Duration warmup, Duration duration) {}

  private final ClientFactory factory;
  private final String storeName;
  private final Optional<ManagedCluster> cluster;
  private final Params params;
  private final String leaseName = "bench-waiters-" + RunIds.next();
  private final Latency gap = new Latency();
  private final LongAdder handovers = new LongAdder();
  private final LongAdder tokenRegressions = new LongAdder();
  /** When the last leader's work returned, on System.nanoTime(); 0 before the first. */
  private final AtomicLong workEndedAt = new AtomicLong();
  private final AtomicLong lastToken = new AtomicLong(Long.MIN_VALUE);
  private volatile MeasureWindow window;

  /** @param cluster the cluster whose members' CPU is measured, if the bench started it */
  Waiters(ClientFactory factory, String storeName, Optional<ManagedCluster> cluster, Params params) {
    this.factory = factory;
    this.storeName = storeName;
    this.cluster = cluster;
    this.params = params;
  }

  Result run() throws InterruptedException {
    List<LeaseBackend> backends = new ArrayList<>();
    List<LeaderElection> elections = new ArrayList<>();
    try {
      List<LeaderElection.Builder> builders = new ArrayList<>();
      for (int w = 0; w < params.waiters(); w++) {
        LeaseBackend b = factory.open();
        backends.add(b);
        Lease lease = b.newLease(LeaseSettings.builder(leaseName, "bench-w" + w).ttl(params.ttl()).build());
        LeaderElection.Builder builder = LeaderElection.builder(lease, this::lead);
        builders.add(params.observe() ? builder.observing(b) : builder);
      }
      window = MeasureWindow.startingNow(params.warmup(), params.duration());
      for (LeaderElection.Builder builder : builders) {
        elections.add(builder.start());
      }
      ResourceMeter meter = new ResourceMeter(cluster);
      MeasureWindow.sleepUntil(window.measureFrom());
      meter.start();
      MeasureWindow.sleepUntil(window.measureUntil());
      meter.stop();
      return result(meter);
    } finally {
      elections.forEach(LeaderElection::close);
      backends.forEach(LeaseBackend::close);
    }
  }

  /** One term: count the handover, hold the lease, return (the election releases). */
  private void lead(LeaderContext term) {
    long start = System.nanoTime();
    long ended = workEndedAt.get();
    boolean counts = window.measures(start);
    if (counts) {
      handovers.increment();
      if (ended != 0) {
        gap.record(start - ended);
      }
    }
    long previous = lastToken.getAndAccumulate(term.fencingToken(), Math::max);
    if (term.fencingToken() <= previous && counts) {
      tokenRegressions.increment();
    }
    long until = start + params.hold().toNanos();
    while (term.isLeader() && until - System.nanoTime() > 0 && !Thread.currentThread().isInterrupted()) {
      LockSupport.parkNanos(until - System.nanoTime());
    }
    workEndedAt.set(System.nanoTime());
  }

  private Result result(ResourceMeter meter) {
    Result r = new Result("waiters", storeName)
        .param("waiters", params.waiters())
        .param("mode", params.observe() ? "observe" : "poll")
        .param("ttl", Durations.format(params.ttl()))
        .param("hold", Durations.format(params.hold()))
        .param("warmup", Durations.format(params.warmup()))
        .param("duration", Durations.format(params.duration()));
    r.figure("handovers_per_s", "handovers", handovers.sum() / window.seconds(), "/s");
    Latency.addTo(r, "handover_gap", "leader's work returned -> next leader's work started", gap.histogram());
    r.figure("token_regressions", "fencing tokens not increasing (must be 0)", tokenRegressions.sum(), "");
    meter.addTo(r, "", handovers.sum(), "handover");
    return r;
  }
}
