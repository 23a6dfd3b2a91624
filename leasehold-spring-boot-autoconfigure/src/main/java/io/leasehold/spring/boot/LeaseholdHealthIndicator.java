package io.leasehold.spring.boot;

import io.leasehold.LeaseBackend;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Health of the lease store, for Spring Boot Actuator ({@code /actuator/health/leasehold}). Each
 * check makes one bounded call to the store, a {@link LeaseBackend#read} of one lease name (the
 * probe), and reports:
 *
 * <ul>
 *   <li>{@code UP} when the store answered within the timeout; {@code DOWN} with the reason when it
 *       did not (unreachable, failed, timed out); {@code UNKNOWN} when the backend cannot read
 *       lease states (in this release: etcd, ZooKeeper, Kubernetes), so it cannot be probed;</li>
 *   <li>details: {@code backend} (the URI, without credentials), {@code kind} (its scheme), and for
 *       the auto-configured backend {@code leasesHeld} (held now) and {@code leasesLost} (losses
 *       since start); {@code leaders}: the roles of the initiators that lead now.</li>
 * </ul>
 */
public class LeaseholdHealthIndicator extends AbstractHealthIndicator {

  private final LeaseBackend backend;
  private final String probeLease;
  private final Duration timeout;
  private final List<LeaseholdLeaderInitiator> initiators;

  /**
   * @param backend the backend to probe
   * @param probeLease the lease name read by each check
   * @param timeout how long a check waits for the store
   * @param initiators the leader initiators whose leadership the details list
   */
  public LeaseholdHealthIndicator(
      LeaseBackend backend, String probeLease, Duration timeout, List<LeaseholdLeaderInitiator> initiators) {
    super("Leasehold health check failed");
    this.backend = backend;
    this.probeLease = probeLease;
    this.timeout = timeout;
    this.initiators = List.copyOf(initiators);
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) throws Exception {
    String uri = backend.uri();
    int colon = uri.indexOf(':');
    builder.withDetail("backend", uri).withDetail("kind", colon > 0 ? uri.substring(0, colon) : uri);
    if (backend instanceof CountingLeaseBackend counting) {
      builder.withDetail("leasesHeld", counting.heldLeases()).withDetail("leasesLost", counting.lostLeases());
    }
    builder.withDetail(
        "leaders", initiators.stream().filter(LeaseholdLeaderInitiator::isLeader).map(LeaseholdLeaderInitiator::getRole).toList());
    try {
      backend.read(probeLease).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
      builder.up();
    } catch (UnsupportedOperationException e) {
      builder.status(Status.UNKNOWN).withDetail("reason", "the backend cannot be probed: " + e.getMessage());
    } catch (TimeoutException e) {
      builder.down().withDetail("reason", "the store did not answer within " + timeout);
    } catch (ExecutionException | CompletionException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      builder.down().withDetail("reason", "the store did not answer: " + cause);
    } catch (IllegalStateException e) {
      builder.down().withDetail("reason", e.getMessage()); // the backend is closed
    }
  }
}
