package io.leasehold.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.shedlock.LeaseholdLockProvider;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import net.javacrumbs.shedlock.core.LockProvider;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

/** Each condition, each property and each bad value of the auto-configuration. */
class LeaseholdAutoConfigurationTest {

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfiguration.class));

  private final ApplicationContextRunner withMemory = runner.withPropertyValues("leasehold.backend=memory:");

  @Test
  void nothingWithoutABackend() {
    runner.run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean(LeaseBackend.class);
      assertThat(ctx).doesNotHaveBean(LockProvider.class);
      assertThat(ctx).doesNotHaveBean(LockRegistry.class);
    });
  }

  @Test
  void theBackendIsOpenedFromItsUriAndClosedWithTheContext() {
    LeaseBackend[] seen = new LeaseBackend[1];
    withMemory.run(ctx -> {
      assertThat(ctx).hasSingleBean(LeaseBackend.class);
      seen[0] = ctx.getBean(LeaseBackend.class);
      assertThat(seen[0].uri()).isEqualTo("memory:");
    });
    assertThatThrownBy(() -> seen[0].newLease(LeaseSettings.builder("after-close", "test").build()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  void aHeldLeaseIsReleasedWhenTheContextCloses() {
    LeaseBackend store = LeaseBackend.open("memory:");
    try {
      ApplicationContextRunner shared = runner.withPropertyValues("leasehold.backend=memory:").withBean("leaseBackend", LeaseBackend.class, () -> store);
      shared.run(ctx -> {
        LeaseholdLockRegistry registry = ctx.getBean(LeaseholdLockRegistry.class);
        registry.obtain("held-at-shutdown").lock();
      });
      // The application's own backend bean is closed with the context too (inferred close()).
      assertThatThrownBy(() -> store.newLease(LeaseSettings.builder("x", "y").build())).isInstanceOf(IllegalStateException.class);
    } finally {
      store.close();
    }
  }

  @Test
  void everyLeasePropertyReachesTheSettings() {
    withMemory
        .withPropertyValues(
            "leasehold.owner=orders-1",
            "leasehold.lease.ttl=9s",
            "leasehold.lease.heartbeat-interval=2s",
            "leasehold.lease.acquire-retries=5",
            "leasehold.lease.retry-interval=300ms",
            "leasehold.lease.operation-timeout=700ms",
            "leasehold.lease.max-clock-drift=0.02",
            "leasehold.lease.safety-margin=1s")
        .run(ctx -> {
          LeaseSettings s = ctx.getBean(LeaseSettingsTemplate.class).apply("orders");
          assertThat(s.name()).isEqualTo("orders");
          assertThat(s.owner()).isEqualTo("orders-1");
          assertThat(s.ttl()).isEqualTo(Duration.ofSeconds(9));
          assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofSeconds(2));
          assertThat(s.acquireRetries()).isEqualTo(5);
          assertThat(s.retryInterval()).isEqualTo(Duration.ofMillis(300));
          assertThat(s.operationTimeout()).isEqualTo(Duration.ofMillis(700));
          assertThat(s.maxClockDrift()).isEqualTo(0.02);
          assertThat(s.safetyMargin()).isEqualTo(Duration.ofSeconds(1));
        });
  }

  @Test
  void unsetLeasePropertiesKeepTheApiDefaults() {
    withMemory.withPropertyValues("leasehold.owner=orders-1").run(ctx ->
        assertThat(ctx.getBean(LeaseSettingsTemplate.class).apply("orders"))
            .isEqualTo(LeaseSettings.builder("orders", "orders-1").build()));
  }

  @Test
  void shedLockAndTheLockRegistryWhenTheirLibrariesArePresent() {
    withMemory
        .withPropertyValues("leasehold.shedlock.name-prefix=jobs/", "leasehold.integration.name-prefix=locks/")
        .run(ctx -> {
          assertThat(ctx).hasSingleBean(LockProvider.class);
          assertThat(ctx.getBean(LockProvider.class)).isInstanceOf(LeaseholdLockProvider.class);
          assertThat(ctx).hasSingleBean(LockRegistry.class);
          LeaseholdLockRegistry registry = ctx.getBean(LeaseholdLockRegistry.class);
          assertThat(registry.obtain("k").leaseName()).isEqualTo("locks/k");
          assertThat(registry).hasToString("LeaseholdLockRegistry[memory:, prefix 'locks/']");
        });
  }

  @Test
  void noShedLockBeanWithoutShedLock() {
    withMemory.withClassLoader(new FilteredClassLoader("net.javacrumbs.shedlock", "io.leasehold.shedlock")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean(LeaseholdLockProvider.class);
      assertThat(ctx).hasSingleBean(LockRegistry.class);
    });
  }

  @Test
  void noLockRegistryWithoutSpringIntegration() {
    withMemory.withClassLoader(new FilteredClassLoader("org.springframework.integration", "io.leasehold.integration")).run(ctx -> {
      assertThat(ctx).hasNotFailed();
      assertThat(ctx).doesNotHaveBean(LeaseholdLockRegistry.class);
      assertThat(ctx).hasSingleBean(LockProvider.class);
    });
  }

  @Test
  void eachBeanCanBeTurnedOff() {
    withMemory.withPropertyValues("leasehold.shedlock.enabled=false", "leasehold.integration.enabled=false").run(ctx -> {
      assertThat(ctx).hasSingleBean(LeaseBackend.class);
      assertThat(ctx).doesNotHaveBean(LockProvider.class);
      assertThat(ctx).doesNotHaveBean(LockRegistry.class);
    });
  }

  @Test
  void theApplicationsOwnBeansWin() {
    LockProvider own = config -> Optional.empty();
    withMemory
        .withBean(LockProvider.class, () -> own)
        .withBean(LockRegistry.class, DefaultLockRegistry::new)
        .run(ctx -> {
          assertThat(ctx.getBean(LockProvider.class)).isSameAs(own);
          assertThat(ctx.getBean(LockRegistry.class)).isInstanceOf(DefaultLockRegistry.class);
        });
  }

  @Test
  void aBadBackendFailsStartupNamingTheProperty() {
    runner.withPropertyValues("leasehold.backend=nosuch://x").run(ctx ->
        assertThat(ctx).getFailure().rootCause()
            .hasMessageContaining("leasehold.backend")
            .hasMessageContaining("nosuch"));
  }

  @Test
  void aBackendWithAPasswordFailsStartupWithoutShowingIt() {
    runner.withPropertyValues("leasehold.backend=memory://alice:hunter2@localhost").run(ctx -> {
      assertThat(ctx).getFailure().rootCause()
          .hasMessageContaining("leasehold.backend")
          .hasMessageContaining("alice:***@localhost");
      for (Throwable t = ctx.getStartupFailure(); t != null; t = t.getCause()) {
        assertThat(String.valueOf(t.getMessage())).as("%s", t.getClass()).doesNotContain("hunter2");
      }
    });
  }

  @Test
  void badLeaseValuesFailStartupNamingTheProperty() {
    assertFailure("leasehold.lease.ttl=0s", "leasehold.lease.ttl", "ttl must be between");
    assertFailure("leasehold.lease.acquire-retries=101", "leasehold.lease.acquire-retries", "between 0 and 100");
    assertFailure("leasehold.lease.max-clock-drift=0.5", "leasehold.lease.max-clock-drift", "below 0.5");
    assertFailure("leasehold.lease.heartbeat-interval=20s", "leasehold.lease.heartbeat-interval", "safe window");
    assertFailure("leasehold.lease.safety-margin=20s", "leasehold.lease.safety-margin", "safe window");
    assertFailure("leasehold.owner=" + "x".repeat(300), "leasehold.owner", "owner");
    assertFailure("leasehold.lease.ttl=soon", "leasehold.lease.ttl", "soon");
    assertFailure("leasehold.shedlock.minimum-ttl=0s", "leasehold.shedlock.minimum-ttl", "ttl must be between");
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

  @Test
  void thePropertiesHaveMetadataForIdes() throws IOException {
    try (InputStream in =
        getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      assertThat(in).as("generated by the configuration processor").isNotNull();
      String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertThat(json)
          .contains("\"leasehold.backend\"", "\"leasehold.owner\"", "\"leasehold.lease.ttl\"",
              "\"leasehold.lease.heartbeat-interval\"", "\"leasehold.lease.safety-margin\"",
              "\"leasehold.shedlock.enabled\"", "\"leasehold.integration.name-prefix\"",
              "\"leasehold.leader-election\"", "\"leasehold.health.timeout\"",
              "\"leasehold.health.probe-lease\"")
          .contains("How long the store keeps a lease after the last renewal it received");
    }
  }
}
