package io.leasehold.spring.boot.starter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.integration.LeaseLock;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.server.LocalCluster;
import io.leasehold.spring.boot.LeaseholdHealthIndicator;
import io.leasehold.spring.boot.LeaseholdLeaderInitiator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.support.LockException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.health.registry.HealthContributorRegistry;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A Spring Boot application with the starter, ShedLock and Spring Integration on its class path,
 * configured only by properties, on a real 3-node core: its beans lock for real against another
 * process, and closing an instance of it hands its leases on at once.
 */
@SpringBootTest(
    classes = CoreApplicationTest.App.class,
    properties = {"leasehold.owner=boot-app", "leasehold.lease.ttl=6s"})
@DirtiesContext
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreApplicationTest {

  private static LocalCluster cluster;

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  @DynamicPropertySource
  static void backend(DynamicPropertyRegistry properties) {
    properties.add("leasehold.backend", () -> cluster().uri());
  }

  private static synchronized LocalCluster cluster() {
    if (cluster == null) {
      try {
        cluster =
            LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "boot-"),
                c -> c); // the default election timeout: 150 ms kept electing on a loaded machine
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return cluster;
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Autowired LeaseBackend backend;
  @Autowired LockProvider lockProvider;
  @Autowired LockRegistry<?> lockRegistry;
  @Autowired LeaseholdHealthIndicator health;
  @Autowired HealthContributorRegistry healthContributors;

  @Test
  void theApplicationLocksOnTheCoreAndReleasesOnShutdown() {
    assertThat(backend.uri()).isEqualTo(cluster.uri());
    assertThat(lockRegistry).isInstanceOf(LeaseholdLockRegistry.class);

    try (LeaseBackend otherProcess = LeaseBackend.open(cluster.uri())) {
      // The first call may meet a cluster still settling: an unknown answer is a LockException,
      // and the next call of the same name (as a scheduler's next run) is the same holder.
      Optional<SimpleLock> job =
          await()
              .atMost(Duration.ofSeconds(30))
              .ignoreException(LockException.class)
              .until(
                  () -> lockProvider.lock(
                      new LockConfiguration(Instant.now(), "nightly", Duration.ofMinutes(1), Duration.ZERO)),
                  Optional::isPresent);
      assertThat(job).isPresent();
      assertThat(tryTake(otherProcess, "shedlock/nightly")).as("held by the application").isFalse();
      job.get().unlock();
      assertThat(tryTake(otherProcess, "shedlock/nightly")).as("free after unlock()").isTrue();

      LeaseLock orders = (LeaseLock) lockRegistry.obtain("orders");
      orders.lock();
      assertThat(orders.fencingToken()).isPresent();
      assertThat(tryTake(otherProcess, "orders")).as("held by the application").isFalse();
      orders.unlock();
      assertThat(tryTake(otherProcess, "orders")).as("free after unlock()").isTrue();
    }
    // The probe is a linearizable read on the core: UP only when a majority answers.
    Health up = await().atMost(Duration.ofSeconds(30)).until(health::health, h -> h.getStatus().equals(Status.UP));
    assertThat(up.getDetails()).containsEntry("kind", "leasehold").containsKey("leasesHeld");
    assertThat(healthContributors.getContributor("leasehold"))
        .as("Boot's health registry names it leasehold: /actuator/health/leasehold")
        .isSameAs(health);
  }

  @Test
  void aGracefulShutdownHandsTheLeasesOnAtOnce() {
    try (LeaseBackend otherProcess = LeaseBackend.open(cluster.uri())) {
      // A second instance of the application, stopped as an orchestrator stops it.
      ConfigurableApplicationContext instance =
          new SpringApplicationBuilder(App.class)
              .web(WebApplicationType.NONE)
              .properties("leasehold.backend=" + cluster.uri(), "leasehold.owner=boot-app-2", "leasehold.lease.ttl=30s",
                  "leasehold.leader-election.reports.lease-name=leader/reports")
              .run();
      LeaseholdLeaderInitiator reports = instance.getBean(LeaseholdLeaderInitiator.class);
      await().atMost(Duration.ofSeconds(30)).until(reports::isLeader);
      assertThat(tryTake(otherProcess, "leader/reports")).as("led by the instance").isFalse();
      LeaseLock held = (LeaseLock) instance.getBean(LockRegistry.class).obtain("held-at-shutdown");
      // An unknown answer (a cluster still settling) throws; the same lock tries again as the
      // same holder.
      await().atMost(Duration.ofSeconds(30)).ignoreException(CannotAcquireLockException.class).until(() -> {
        held.lock();
        return true;
      });
      assertThat(tryTake(otherProcess, "held-at-shutdown")).as("held by the instance").isFalse();

      instance.close(); // the initiator stops, then the backend bean closes and releases what it holds
      assertThat(tryTake(otherProcess, "held-at-shutdown"))
          .as("handed on at shutdown, without waiting for the 30 s TTL")
          .isTrue();
      assertThat(tryTake(otherProcess, "leader/reports"))
          .as("leadership given up at shutdown, without waiting for the 30 s TTL")
          .isTrue();
    }
  }

  private static boolean tryTake(LeaseBackend backend, String name) {
    try (Lease lease = backend.newLease(LeaseSettings.builder(name, "other-process").acquireRetries(0).build())) {
      return lease.acquire().join();
    }
  }
}
