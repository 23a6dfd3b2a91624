package io.leasehold.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.memory.MemoryBackend;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The Actuator health indicator: its conditions, its probe, its details. */
@Timeout(60)
@Tag("integration")
class LeaseholdHealthIndicatorTest {

  private static final Duration PATIENCE = Duration.ofSeconds(20);

  private final ApplicationContextRunner withMemory =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfiguration.class))
          .withPropertyValues("leasehold.backend=memory:");

  @Test
  void upWithTheBackendAndItsLeases() {
    withMemory.withPropertyValues("leasehold.leader-election.orders.lease-name=orders-leader").run(ctx -> {
      assertThat(ctx).hasSingleBean(LeaseholdHealthIndicator.class);
      ctx.getBean(LeaseholdLockRegistry.class).obtain("k").lock();
      LeaseholdLeaderInitiator orders = ctx.getBean(LeaseholdLeaderInitiator.class);
      await().atMost(PATIENCE).until(orders::isLeader);

      Health health = ctx.getBean(LeaseholdHealthIndicator.class).health();

      assertThat(health.getStatus()).isEqualTo(Status.UP);
      assertThat(health.getDetails())
          .containsEntry("backend", "memory:")
          .containsEntry("kind", "memory")
          .containsEntry("leasesHeld", 2) // the lock and the leadership
          .containsEntry("leasesLost", 0L)
          .containsEntry("leaders", List.of("orders"));
    });
  }

  @Test
  void downWithTheReasonWhileTheStoreDoesNotAnswer_andLossesAreCounted() {
    withMemory.withPropertyValues("leasehold.health.timeout=300ms").run(ctx -> {
      LeaseholdHealthIndicator indicator = ctx.getBean(LeaseholdHealthIndicator.class);
      CountingLeaseBackend backend = (CountingLeaseBackend) ctx.getBean(LeaseBackend.class);
      MemoryBackend memory = (MemoryBackend) backend.unwrap();
      Lease lease = backend.newLease(LeaseSettings.builder("held", "test").build());
      assertThat(lease.acquire().get()).isTrue();

      memory.cutOff();
      Health down = indicator.health();
      assertThat(down.getStatus()).isEqualTo(Status.DOWN);
      assertThat(down.getDetails().get("reason").toString()).contains("did not answer within PT0.3S");
      memory.heal();
      await().atMost(PATIENCE).until(() -> indicator.health().getStatus().equals(Status.UP));

      assertThat(memory.store().revoke("held")).isTrue();
      await().atMost(PATIENCE).until(() -> backend.lostLeases() == 1);
      assertThat(indicator.health().getDetails()).containsEntry("leasesHeld", 0).containsEntry("leasesLost", 1L);
    });
  }

  @Test
  void unknownWhenTheBackendCannotBeProbed() {
    withMemory.withBean("leaseBackend", LeaseBackend.class, () -> new LeaseBackend() {
      @Override
      public Lease newLease(LeaseSettings settings) {
        throw new UnsupportedOperationException();
      }

      @Override
      public String uri() {
        return "etcd://127.0.0.1:2379";
      }

      @Override
      public void close() {}
    }).run(ctx -> {
      Health health = ctx.getBean(LeaseholdHealthIndicator.class).health();
      assertThat(health.getStatus()).isEqualTo(Status.UNKNOWN);
      assertThat(health.getDetails()).containsEntry("kind", "etcd").doesNotContainKey("leasesHeld");
      assertThat(health.getDetails().get("reason").toString()).contains("cannot be probed");
    });
  }

  @Test
  void noIndicatorWithoutActuator() { // Boot's health jar, which Actuator brings, hidden whole
    withMemory.withClassLoader(new FilteredClassLoader("org.springframework.boot.health")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean(LeaseholdHealthIndicator.class);
      assertThat(ctx).hasSingleBean(LeaseBackend.class);
    });
  }

  @Test
  void theIndicatorCanBeTurnedOff() {
    withMemory.withPropertyValues("management.health.leasehold.enabled=false").run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean(LeaseholdHealthIndicator.class);
    });
  }

  @Test
  void badHealthValuesFailStartupNamingTheProperty() {
    assertFailure("leasehold.health.timeout=0s", "leasehold.health.timeout", "between 1 ms and 1 min");
    assertFailure("leasehold.health.timeout=2m", "leasehold.health.timeout", "between 1 ms and 1 min");
    assertFailure("leasehold.health.probe-lease=a\tb", "leasehold.health.probe-lease", "control characters");
  }

  private void assertFailure(String property, String named, String reason) {
    withMemory.withPropertyValues(property).run(ctx -> {
      assertThat(ctx).as(property).hasFailed();
      StringBuilder messages = new StringBuilder();
      for (Throwable t = ctx.getStartupFailure(); t != null; t = t.getCause()) {
        messages.append(t.getMessage()).append('\n');
      }
      assertThat(messages.toString()).as(property).contains(named).contains(reason);
    });
  }
}
