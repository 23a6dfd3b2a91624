package io.leasehold.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseException;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the meters show while leases are acquired, refused, renewed, starved of renewals and lost. */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MeteredLeaseBackendTest {

  private final MemoryStore store = MemoryStore.create();
  private final MemoryBackend node1 = store.connect();
  private final MemoryBackend node2 = store.connect();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final MeteredLeaseBackend metered = MeteredLeaseBackend.of(node1);

  @AfterEach
  void close() {
    metered.close();
    node2.close();
  }

  private static LeaseSettings settings(String name, String owner) {
    return LeaseSettings.builder(name, owner).ttl(Duration.ofMillis(900)).acquireRetries(0).build();
  }

  @Test
  void acquiresRenewalsHeldLeasesAndLosses() {
    metered.bindTo(registry);
    Lease a = metered.newLease(settings("jobs", "node-1"));
    assertThat(a.acquire().join()).isTrue();
    assertThat(acquires("acquired")).isEqualTo(1);
    assertThat(gauge("leasehold.lease.held")).isEqualTo(1);
    assertThat(gauge("leasehold.lease.remaining.min"))
        .isGreaterThan(0)
        .isLessThanOrEqualTo(a.settings().safeWindow().toNanos() / 1e9);

    try (Lease other = metered.newLease(settings("jobs", "node-1b"))) {
      assertThat(other.acquire().join()).isFalse();
    }
    assertThat(acquires("refused")).isEqualTo(1);

    await().atMost(Duration.ofSeconds(10)).until(() -> renewals("renewed") >= 2);

    node1.cutOff(); // renewals now time out until the safe deadline passes
    await().atMost(Duration.ofSeconds(10)).until(() -> renewals("failed") >= 1);
    await().atMost(Duration.ofSeconds(10)).until(() -> lost("expired") == 1);
    assertThat(gauge("leasehold.lease.held")).isZero();
    assertThat(gauge("leasehold.lease.remaining.min")).isNaN();

    try (Lease cutOff = metered.newLease(settings("other", "node-1"))) {
      assertThat(cutOff.acquire())
          .failsWithin(Duration.ofSeconds(10))
          .withThrowableThat()
          .withCauseInstanceOf(LeaseException.class);
    }
    assertThat(acquires("unknown")).isEqualTo(1);
    node1.heal();
  }

  @Test
  void aMeteredBackendStillReadsAndObservesLeases() {
    Lease a = metered.newLease(settings("jobs", "node-1"));
    assertThat(a.acquire().join()).isTrue();
    assertThat(metered.read("jobs").join().holding()).as("read passes through").isPresent();
    java.util.List<io.leasehold.LeaseEvent> events = new java.util.concurrent.CopyOnWriteArrayList<>();
    io.leasehold.Subscription s = metered.observe("jobs", events::add);
    a.release().join();
    await().atMost(Duration.ofSeconds(10))
        .until(() -> events.stream().anyMatch(e -> e.type() == io.leasehold.LeaseEvent.Type.RELEASED));
    s.cancel();
  }

  @Test
  void leaseNamesAreNeverTags() {
    metered.bindTo(registry);
    for (int i = 0; i < 5; i++) {
      try (Lease l = metered.newLease(settings("lease-" + i, "node-1"))) {
        l.acquire().join();
      }
    }
    for (Meter meter : registry.getMeters()) {
      assertThat(meter.getId().getTags()).extracting(Tag::getKey).isSubsetOf("backend", "outcome", "kind");
      assertThat(meter.getId().getTag("backend")).isEqualTo("memory");
    }
    assertThat(registry.getMeters()).hasSize(3 + 2 + 4 + 2); // acquire, renewal, lost, gauges
  }

  private double acquires(String outcome) {
    return registry.get("leasehold.lease.acquire").tag("outcome", outcome).timer().count();
  }

  private double renewals(String outcome) {
    return registry.get("leasehold.lease.renewal").tag("outcome", outcome).timer().count();
  }

  private double lost(String kind) {
    return registry.get("leasehold.lease.lost").tag("kind", kind).counter().count();
  }

  private double gauge(String name) {
    return registry.get(name).gauge().value();
  }
}
