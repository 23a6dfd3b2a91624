package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.LeaseLost;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The time-safety rule on its own: one tenure's deadline and who may end it, and how often. */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class TenancyTest {

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
  private final List<LeaseLost> losses = new CopyOnWriteArrayList<>();
  private final Tenure tenure =
      new Tenure("jobs", io.leasehold.HolderId.newIncarnation("node-1"), 1, 7, Duration.ofSeconds(10));

  private Tenancy liveFor(Duration d) {
    return new Tenancy(tenure, clock.read() + d.toNanos(), clock, (t, reason) -> losses.add(reason));
  }

  @Test
  void liveBeforeItsDeadlineAndOverFromTheFirstReadingAtIt() {
    Tenancy t = liveFor(Duration.ofSeconds(5));
    clock.advance(Duration.ofSeconds(5).minusNanos(1));
    assertThat(t.alive()).isTrue();
    assertThat(losses).isEmpty();

    clock.advance(Duration.ofNanos(1));
    assertThat(t.alive()).isFalse();
    assertThat(t.alive()).isFalse();
    assertThat(t.isOver()).isTrue();
    assertThat(losses).singleElement().extracting(LeaseLost::kind).isEqualTo(LeaseLost.Kind.EXPIRED);
  }

  @Test
  void aRenewalMovesTheDeadlineOnlyLaterAndNeverRevivesAnEndedTenure() {
    Tenancy t = liveFor(Duration.ofSeconds(5));
    long deadline = t.deadline();
    assertThat(t.extendTo(deadline - 1_000)).as("an earlier deadline keeps the tenure").isTrue();
    assertThat(t.deadline()).as("but not the earlier deadline").isEqualTo(deadline);
    assertThat(t.extendTo(deadline + 1_000)).isTrue();
    assertThat(t.deadline()).isEqualTo(deadline + 1_000);

    clock.advance(Duration.ofSeconds(6));
    assertThat(t.extendTo(clock.read() + Duration.ofSeconds(5).toNanos()))
        .as("a renewal answered after the deadline passed")
        .isFalse();
    assertThat(t.alive()).isFalse();
    assertThat(losses).as("the passed deadline is a loss, found by the renewal").hasSize(1);
  }

  @Test
  void theStoresWordEndsItOnceAndIsReportedOnce() {
    Tenancy t = liveFor(Duration.ofSeconds(5));
    LeaseLost revoked = new LeaseLost(LeaseLost.Kind.REVOKED, "deleted by an operator");
    t.endByStore(revoked);
    t.endByStore(new LeaseLost(LeaseLost.Kind.TAKEN_OVER, "a second report"));
    clock.advance(Duration.ofSeconds(10));

    assertThat(t.alive()).isFalse();
    assertThat(t.extendTo(clock.read() + 1_000_000)).isFalse();
    assertThat(losses).containsExactly(revoked);
  }

  @Test
  void aReleaseEndsALiveTenureWithoutALoss() {
    Tenancy t = liveFor(Duration.ofSeconds(5));
    long deadline = t.deadline();

    assertThat(t.endVoluntarily()).isEqualTo(deadline);
    assertThat(t.lossHandled).isDone();
    assertThat(t.alive()).isFalse();
    assertThat(t.endVoluntarily()).as("a second release").isEqualTo(Tenancy.ENDED);
    assertThat(losses).isEmpty();
  }

  @Test
  void aReleaseAfterTheDeadlinePassedReportsTheLossInsteadOfSwallowingIt() {
    Tenancy t = liveFor(Duration.ofSeconds(5));
    clock.advance(Duration.ofSeconds(5));

    assertThat(t.endVoluntarily()).isEqualTo(Tenancy.ENDED);
    assertThat(losses).singleElement().extracting(LeaseLost::kind).isEqualTo(LeaseLost.Kind.EXPIRED);
  }

  @Test
  void manyThreadsFindingThePassedDeadlineReportItOnce() throws Exception {
    for (int round = 0; round < 200; round++) {
      losses.clear();
      Tenancy t = liveFor(Duration.ofSeconds(1));
      clock.advance(Duration.ofSeconds(1));
      CountDownLatch start = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        int which = i;
        Thread thread = new Thread(() -> {
          try {
            start.await();
          } catch (InterruptedException e) {
            return;
          }
          switch (which) {
            case 0 -> t.alive();
            case 1 -> t.extendTo(clock.read() + 1_000_000_000L);
            case 2 -> t.endVoluntarily();
            default -> t.endByStore(new LeaseLost(LeaseLost.Kind.TAKEN_OVER, "the store"));
          }
        });
        thread.start();
        threads.add(thread);
      }
      start.countDown();
      for (Thread thread : threads) {
        thread.join();
      }
      assertThat(losses).as("losses reported in round %d", round).hasSize(1);
      assertThat(t.alive()).isFalse();
    }
  }

  @Test
  void theFailedRenewalsSayWhyItExpired() {
    Tenancy t = liveFor(Duration.ofSeconds(1));
    t.failures = new Tenancy.RenewalFailures(3, "connection refused");
    clock.advance(Duration.ofSeconds(1));

    assertThat(t.alive()).isFalse();
    assertThat(losses).singleElement().satisfies(lost ->
        assertThat(lost.detail()).contains("3 failed attempt(s)", "connection refused"));
  }
}
