package io.leasehold.bench;

import io.leasehold.cli.Durations;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.HdrHistogram.Histogram;

/**
 * {@code failover --kill holder}: in each round a holder in its own JVM ({@link HolderChild})
 * takes a lease, the bench kills that JVM with SIGKILL (no release), and a contender in the bench's
 * JVM, asking once every few milliseconds, measures how long until it holds the lease. A store
 * that honours the TTL hands the lease on after about the TTL, never before the holder's safe
 * window has passed.
 */
final class HolderFailover {

  /**
   * What to run.
   *
   * @param rounds how many kills
   * @param ttl the lease's TTL
   * @param recoveryTimeout how long to wait for the takeover before the round counts as failed
   */
  record Params(int rounds, Duration ttl, Duration recoveryTimeout) {}

  private final String uri;
  private final String storeName;
  private final ClientFactory clients;
  private final Params params;
  private final ErrorCounts errors = new ErrorCounts();

  HolderFailover(String uri, String storeName, ClientFactory clients, Params params) {
    this.uri = uri;
    this.storeName = storeName;
    this.clients = clients;
    this.params = params;
  }

  Result run() throws InterruptedException {
    Histogram takeover = new Histogram(3);
    List<Map<String, Object>> rounds = new ArrayList<>();
    String runId = RunIds.next();
    try (LeaseBackend backend = clients.open()) {
      for (int round = 1; round <= params.rounds(); round++) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("round", round);
        rounds.add(r);
        String name = "bench-holder-failover-" + runId + "-" + round;
        try (HolderChild child = HolderChild.start(uri, name, params.ttl());
            Lease contender = backend.newLease(LeaseSettings.builder(name, "bench-contender").ttl(params.ttl()).acquireRetries(0).build())) {
          child.awaitHeld(params.recoveryTimeout());
          long killedAt = System.nanoTime();
          child.kill();
          long deadline = killedAt + params.recoveryTimeout().toNanos();
          long acquiredAt = -1;
          while (System.nanoTime() - deadline < 0) {
            try {
              if (contender.acquire().get(params.ttl().toMillis() * 3, TimeUnit.MILLISECONDS)) {
                acquiredAt = System.nanoTime();
                break;
              }
            } catch (ExecutionException | TimeoutException e) {
              errors.record("contender acquire", e);
            }
            TimeUnit.MILLISECONDS.sleep(5);
          }
          if (acquiredAt < 0) {
            r.put("error", "no takeover within " + params.recoveryTimeout());
            errors.record("no takeover within the recovery timeout");
          } else {
            long nanos = acquiredAt - killedAt;
            takeover.recordValue(nanos);
            r.put("takeover_ms", nanos / 1e6);
            contender.release().get(params.ttl().toMillis() * 3, TimeUnit.MILLISECONDS);
          }
        } catch (IOException | TimeoutException | ExecutionException e) {
          r.put("error", e.toString());
          errors.record("round", e);
        }
      }
    }
    Result result = new Result("failover", storeName)
        .param("kill", "holder")
        .param("rounds", params.rounds())
        .param("ttl", Durations.format(params.ttl()))
        .param("recovery_timeout", Durations.format(params.recoveryTimeout()));
    result.figure("rounds", "rounds", rounds.size(), "");
    LeaderFailover.addMs(result, "takeover", "holder killed -> another client acquires", takeover);
    result.figure("takeover_over_ttl", "takeover p50 / TTL",
        takeover.getTotalCount() == 0 ? Double.NaN : takeover.getValueAtPercentile(50) / (double) params.ttl().toNanos(), "");
    result.figure("errors", "errors", errors.total(), "");
    result.detail("rounds", rounds);
    return result.errors(errors);
  }
}
