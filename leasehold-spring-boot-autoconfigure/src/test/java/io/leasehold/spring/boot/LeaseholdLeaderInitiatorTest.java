package io.leasehold.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.recipes.election.LeadershipListener.Why;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;

/**
 * Leader elections from {@code leasehold.leader-election.<role>}, their events, and graceful
 * release on context shutdown: the next contender acquires at once, not after the TTL.
 */
@Timeout(60)
class LeaseholdLeaderInitiatorTest {

  private static final Duration PATIENCE = Duration.ofSeconds(20); // a loaded machine, never a timing claim

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfiguration.class))
          .withPropertyValues("leasehold.backend=memory:")
          .withBean(Events.class, Events::new);

  /** Collects the leadership events of one context, in order. */
  static final class Events implements ApplicationListener<LeaseholdLeaderEvent> {
    final List<LeaseholdLeaderEvent> seen = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeaseholdLeaderEvent event) {
      seen.add(event);
    }
  }

  @Test
  void oneInitiatorPerConfiguredRoleStartedAndStoppedWithTheContext() {
    Events[] events = new Events[1];
    LeaseholdLeaderInitiator[] orders = new LeaseholdLeaderInitiator[1];
    long[] token = new long[1];
    runner
        .withPropertyValues(
            "leasehold.leader-election.orders.lease-name=orders-leader",
            "leasehold.leader-election.billing.auto-startup=false")
        .run(ctx -> {
          assertThat(ctx).hasNotFailed();
          assertThat(ctx.getBeansOfType(LeaseholdLeaderInitiator.class))
              .containsOnlyKeys("leaseholdLeaderInitiator-orders", "leaseholdLeaderInitiator-billing");
          orders[0] = ctx.getBean("leaseholdLeaderInitiator-orders", LeaseholdLeaderInitiator.class);
          LeaseholdLeaderInitiator billing = ctx.getBean("leaseholdLeaderInitiator-billing", LeaseholdLeaderInitiator.class);
          assertThat(orders[0].getRole()).isEqualTo("orders");
          assertThat(orders[0].getSettings().name()).isEqualTo("orders-leader");
          assertThat(billing.getSettings().name()).isEqualTo("leader/billing"); // the default
          assertThat(billing.isRunning()).isFalse();

          events[0] = ctx.getBean(Events.class);
          await().atMost(PATIENCE).until(() -> !events[0].seen.isEmpty());
          LeaderGrantedEvent granted = (LeaderGrantedEvent) events[0].seen.get(0);
          assertThat(granted.getRole()).isEqualTo("orders");
          assertThat(granted.getSource()).isSameAs(orders[0]);
          assertThat(granted.getContext().isLeader()).isTrue();
          assertThat(orders[0].isLeader()).isTrue();
          assertThat(orders[0].getFencingToken()).hasValue(granted.getFencingToken());
          token[0] = granted.getFencingToken();
        });
    // The context's stop gave leadership up: the revoked event came before the release.
    assertThat(orders[0].isRunning()).isFalse();
    assertThat(orders[0].isLeader()).isFalse();
    assertThat(events[0].seen).hasSize(2);
    LeaderRevokedEvent revoked = (LeaderRevokedEvent) events[0].seen.get(1);
    assertThat(revoked.getWhy()).isEqualTo(Why.CLOSED);
    assertThat(revoked.getFencingToken()).isEqualTo(token[0]);
  }

  @Test
  void aLostLeaseRevokesAndTheElectionContendsAgain() {
    runner.withPropertyValues("leasehold.leader-election.orders.lease-name=orders-leader").run(ctx -> {
      LeaseholdLeaderInitiator orders = ctx.getBean(LeaseholdLeaderInitiator.class);
      Events events = ctx.getBean(Events.class);
      await().atMost(PATIENCE).until(orders::isLeader);
      long first = orders.getFencingToken().getAsLong();
      MemoryBackend memory = (MemoryBackend) ((CountingLeaseBackend) ctx.getBean(LeaseBackend.class)).unwrap();

      assertThat(memory.store().revoke("orders-leader")).isTrue();

      await().atMost(PATIENCE).until(() -> events.seen.size() >= 3);
      LeaderRevokedEvent revoked = (LeaderRevokedEvent) events.seen.get(1);
      assertThat(revoked.getWhy()).isEqualTo(Why.LOST);
      assertThat(revoked.getFencingToken()).isEqualTo(first);
      assertThat(events.seen.get(2)).isInstanceOf(LeaderGrantedEvent.class);
      assertThat(events.seen.get(2).getFencingToken()).isGreaterThan(first);
    });
  }

  @Test
  void closingTheContextHandsEveryLeaseOnAtOnce() throws Exception {
    MemoryStore store = MemoryStore.create();
    try (LeaseBackend otherProcess = store.connect()) {
      runner
          .withPropertyValues("leasehold.lease.ttl=60s", "leasehold.leader-election.orders.lease-name=orders-leader")
          .withBean("leaseBackend", LeaseBackend.class, store::connect)
          .run(ctx -> {
            LeaseholdLeaderInitiator orders = ctx.getBean(LeaseholdLeaderInitiator.class);
            await().atMost(PATIENCE).until(orders::isLeader);
            ctx.getBean(LeaseholdLockRegistry.class).obtain("orders-lock").lock();
            assertThat(tryTake(otherProcess, "orders-leader")).isFalse();
            assertThat(tryTake(otherProcess, "orders-lock")).isFalse();
          });
      // One attempt each, with a 60 s TTL: taken at once, so the context released both.
      assertThat(tryTake(otherProcess, "orders-leader")).isTrue();
      assertThat(tryTake(otherProcess, "orders-lock")).isTrue();
    }
  }

  @Test
  void aGrantedListenerThatThrowsEndsTheTermWithARevokedEvent() {
    AtomicInteger grants = new AtomicInteger();
    ApplicationListener<LeaderGrantedEvent> failsOnce = event -> {
      if (grants.incrementAndGet() == 1) {
        throw new IllegalStateException("could not start the leader-only work");
      }
    };
    runner
        .withPropertyValues("leasehold.leader-election.orders.lease-name=orders-leader")
        .withBean("failsOnce", ApplicationListener.class, () -> failsOnce)
        .run(ctx -> {
          Events events = ctx.getBean(Events.class);
          // Other listeners may have started work on the grant: they must hear that it ended.
          await().atMost(PATIENCE).until(() -> events.seen.stream().anyMatch(LeaderRevokedEvent.class::isInstance));
          LeaderRevokedEvent revoked = (LeaderRevokedEvent) events.seen.stream()
              .filter(LeaderRevokedEvent.class::isInstance).findFirst().orElseThrow();
          assertThat(revoked.getWhy()).isEqualTo(Why.WORK_FAILED);
          // The lease was released and the election contends again.
          await().atMost(PATIENCE).until(ctx.getBean(LeaseholdLeaderInitiator.class)::isLeader);
          // The second grant's event is published after the lease is taken, on the election's thread.
          await().atMost(PATIENCE).until(() -> grants.get() >= 2);
          assertThat(grants.get()).isEqualTo(2);
        });
  }

  @Test
  void theRevokedEventComesWhileTheLeaseIsStillHeld() throws Exception {
    MemoryStore store = MemoryStore.create();
    List<Boolean> heldAtRevoke = new CopyOnWriteArrayList<>();
    ApplicationListener<LeaderRevokedEvent> stopsLeaderWork =
        event -> heldAtRevoke.add(store.lookup("orders-leader").isPresent());
    runner
        .withPropertyValues("leasehold.lease.ttl=60s", "leasehold.leader-election.orders.lease-name=orders-leader")
        .withBean("leaseBackend", LeaseBackend.class, store::connect)
        .withBean("stopsLeaderWork", ApplicationListener.class, () -> stopsLeaderWork)
        .run(ctx -> await().atMost(PATIENCE).until(ctx.getBean(LeaseholdLeaderInitiator.class)::isLeader));
    // Listeners stop leader-only work before anyone else can be granted the role.
    assertThat(heldAtRevoke).containsExactly(true);
    assertThat(store.lookup("orders-leader")).isEmpty();
  }

  @Test
  void stoppingAnInitiatorReleasesItsLeaseWhileTheBackendStaysOpen() throws Exception {
    MemoryStore store = MemoryStore.create();
    try (LeaseBackend otherProcess = store.connect()) {
      runner
          .withPropertyValues("leasehold.lease.ttl=60s", "leasehold.leader-election.orders.lease-name=orders-leader")
          .withBean("leaseBackend", LeaseBackend.class, store::connect)
          .run(ctx -> {
            LeaseholdLeaderInitiator orders = ctx.getBean(LeaseholdLeaderInitiator.class);
            await().atMost(PATIENCE).until(orders::isLeader);

            orders.stop();

            assertThat(orders.isRunning()).isFalse();
            assertThat(tryTake(otherProcess, "orders-leader")).isTrue();
            orders.start(); // restartable: contends again, with a new lease object
            assertThat(orders.isRunning()).isTrue();
            assertThat(orders.isLeader()).isFalse();
          });
    }
  }

  @Test
  void anApplicationDeclaredInitiatorRunsItsWorkWhileLeading() {
    runner.withUserConfiguration(CompactorConfig.class).run(ctx -> {
      LeaseholdLeaderInitiator compactor = ctx.getBean("compactor", LeaseholdLeaderInitiator.class);
      Tokens tokens = ctx.getBean(Tokens.class);
      await().atMost(PATIENCE).until(() -> !tokens.seen.isEmpty());
      assertThat(compactor.getFencingToken()).hasValue(tokens.seen.get(0));
      assertThat(ctx.getBean(Events.class).seen.get(0).getRole()).isEqualTo("compactor");
    });
  }

  /** The fencing tokens the leader work started with. */
  static final class Tokens {
    final List<Long> seen = new CopyOnWriteArrayList<>();
  }

  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class CompactorConfig {
    @org.springframework.context.annotation.Bean
    Tokens tokens() {
      return new Tokens();
    }

    @org.springframework.context.annotation.Bean
    LeaseholdLeaderInitiator compactor(LeaseBackend backend, LeaseSettingsTemplate settings, Tokens tokens) {
      return new LeaseholdLeaderInitiator("compactor", backend, settings.apply("leader/compactor"), ctx -> {
        tokens.seen.add(ctx.fencingToken());
        while (ctx.isLeader()) {
          TimeUnit.MILLISECONDS.sleep(50); // stands for leader-only work; interrupted on loss or stop
        }
      });
    }
  }

  @Test
  void aBadLeaseNameFailsStartupNamingTheProperty() {
    runner.withPropertyValues("leasehold.leader-election.orders.lease-name=a\tb").run(ctx -> {
      assertThat(ctx).hasFailed();
      StringBuilder messages = new StringBuilder();
      for (Throwable t = ctx.getStartupFailure(); t != null; t = t.getCause()) {
        messages.append(t.getMessage()).append('\n');
      }
      assertThat(messages.toString())
          .contains("leasehold.leader-election.orders.lease-name")
          .contains("control characters");
    });
  }

  private static boolean tryTake(LeaseBackend backend, String name) throws Exception {
    LeaseSettings settings =
        LeaseSettings.builder(name, "other-process").ttl(Duration.ofSeconds(60)).acquireRetries(0).build();
    return backend.newLease(settings).acquire().get(10, TimeUnit.SECONDS);
  }
}
