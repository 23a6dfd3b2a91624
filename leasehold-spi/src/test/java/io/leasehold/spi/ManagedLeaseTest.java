package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine under interleavings a real store produces only now and then: replies that come
 * late, after the deadline, or out of order, and threads that race at the deadline. Time is
 * virtual; the store answers only when the test says so.
 */
@Timeout(30)
class ManagedLeaseTest {

  private static final Duration TTL = Duration.ofSeconds(10);
  private static final Duration HEARTBEAT = Duration.ofMillis(2500);
  private static final Duration WINDOW = Duration.ofMillis(7900); // 10 s × 0.99 − 2 s

  private final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 5_000_000_000L);
  private final ScriptedStore store = new ScriptedStore();
  private final List<LeaseLost> losses = new CopyOnWriteArrayList<>();
  private final List<ManagedLease> made = new CopyOnWriteArrayList<>();

  @AfterEach
  void settleAndClose() {
    store.acquires.forEach(c -> c.reply().completeExceptionally(new IllegalStateException("end")));
    store.renewals.forEach(c -> c.reply().completeExceptionally(new IllegalStateException("end")));
    store.releases.forEach(c -> c.reply().complete(null));
    made.forEach(ManagedLease::closeAsync);
  }

  private LeaseSettings.Builder settings() {
    return LeaseSettings.builder("jobs", "node-1")
        .ttl(TTL)
        .heartbeatInterval(HEARTBEAT)
        .safetyMargin(Duration.ofSeconds(2))
        .maxClockDrift(0.01)
        .operationTimeout(Duration.ofSeconds(20))
        .retryInterval(Duration.ofMillis(500))
        .acquireRetries(0);
  }

  private ManagedLease lease(LeaseSettings settings, LeaseRuntime runtime) {
    ManagedLease lease = new ManagedLease(settings, store, runtime, closed -> {});
    lease.onLost(losses::add);
    made.add(lease);
    return lease;
  }

  private ManagedLease lease(LeaseSettings settings) {
    return lease(settings, LeaseRuntime.of(clock, clock, clock));
  }

  private ManagedLease held(long token) {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    store.grant(token);
    assertThat(acquired).isCompletedWithValue(true);
    return lease;
  }

  private void advance(Duration d) {
    clock.advance(d);
  }

  @Test
  void theDeadlineRunsFromTheSendTimeOfTheAcquire() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(Duration.ofSeconds(3)); // the reply takes 3 s

    store.grant(1);

    assertThat(acquired).isCompletedWithValue(true);
    assertThat(lease.remaining()).isEqualTo(WINDOW.minusSeconds(3));
  }

  @Test
  void aGrantThatArrivesAfterTheSafeWindowIsNotHeldAndIsGivenBack() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(WINDOW.plusMillis(1));

    store.grant(7);

    assertThat(acquired).isCompletedExceptionally();
    assertThatThrownBy(acquired::join).hasCauseInstanceOf(LeaseTimeoutException.class);
    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(7));
  }

  /**
   * The API promises that operations fail with one of LeaseException's subclasses, so callers can
   * catch the kind they handle. The engine rewrapped a store's failure as a plain LeaseException
   * with the same code, which no {@code catch (LeaseStoreUnavailableException e)} catches.
   */
  @Test
  void aStoreFailureReachesTheCallerAsTheSameSubclass() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    store.acquires.get(0).reply().completeExceptionally(
        new java.util.concurrent.CompletionException(new LeaseStoreUnavailableException("connection refused", null)));

    assertThatThrownBy(acquired::join)
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("connection refused");
  }

  /**
   * A store that refuses the acquire outright (no right on the name, a request it calls invalid,
   * a quota) refuses every retry the same way: the caller learns it at once, not after the
   * retries' wait, and the store is not asked again.
   */
  @Test
  void aRefusalIsNotRetried() {
    ManagedLease lease = lease(settings().acquireRetries(2).build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    store.acquires.get(0).reply().completeExceptionally(
        new java.util.concurrent.CompletionException(
            new LeaseProtocolException("the core refused the call: PERMISSION_DENIED: no right", null)));
    advance(Duration.ofSeconds(5)); // ten retry intervals

    assertThat(store.acquires).as("asked once").hasSize(1);
    assertThatThrownBy(acquired::join)
        .cause()
        .isInstanceOf(LeaseProtocolException.class)
        .hasMessageContaining("PERMISSION_DENIED: no right")
        .hasMessageContaining("refused");
  }

  @Test
  void aSlowRenewalExtendsFromWhenItWasSentNotWhenItsReplyCame() {
    ManagedLease lease = held(1);
    advance(HEARTBEAT); // the renewal goes out now
    ScriptedStore.Renew renewal = store.lastRenewal();
    advance(Duration.ofSeconds(2)); // and its reply takes 2 s

    renewal.reply().complete(new RenewResult.Renewed(renewal.sentAtNanos()));

    assertThat(lease.remaining()).isEqualTo(WINDOW.minusSeconds(2));
  }

  @Test
  void aRenewalAnsweredFromAnEarlierSharedKeepAliveCountsFromThatKeepAlive() {
    ManagedLease lease = held(1);
    advance(HEARTBEAT);
    ScriptedStore.Renew renewal = store.lastRenewal();

    renewal
        .reply()
        .complete(new RenewResult.Renewed(renewal.sentAtNanos() - Duration.ofSeconds(1).toNanos()));

    assertThat(lease.remaining()).isEqualTo(WINDOW.minusSeconds(1));
  }

  @Test
  void aRenewalThatSucceedsAfterTheDeadlineDoesNotBringTheTenureBack() {
    ManagedLease lease = held(1);
    advance(HEARTBEAT);
    ScriptedStore.Renew late = store.lastRenewal();
    advance(WINDOW); // the deadline passes while the renewal is in flight

    late.reply().complete(new RenewResult.Renewed(late.sentAtNanos()));
    advance(Duration.ZERO);

    assertThat(lease.checkAlive()).isFalse();
    assertThat(losses).singleElement().extracting(LeaseLost::kind).isEqualTo(LeaseLost.Kind.EXPIRED);
  }

  @Test
  void aRenewalReplyThatFindsTheDeadlinePassedEndsTheTenureEvenIfNobodyNoticedYet() {
    AtomicLong now = new AtomicLong(0);
    VirtualClock stalled = new VirtualClock(); // no timer runs, so no deadline check either
    ManagedLease lease = lease(settings().build(), LeaseRuntime.of(now::get, stalled, clock));
    lease.acquire();
    store.grant(1);
    now.addAndGet(Duration.ofSeconds(1).toNanos());
    CompletableFuture<Boolean> confirmed = lease.acquire(); // sends a renewal at 1 s
    now.addAndGet(Duration.ofSeconds(7).toNanos()); // 8 s: past the deadline of 7.9 s

    store.lastRenewal().reply().complete(new RenewResult.Renewed(store.lastRenewal().sentAtNanos()));
    advance(Duration.ZERO);

    assertThat(losses).singleElement().extracting(LeaseLost::kind).isEqualTo(LeaseLost.Kind.EXPIRED);
    assertThat(confirmed).as("a fresh acquisition follows the loss").isNotDone();
    assertThat(store.acquires).hasSize(2);
    assertThat(lease.checkAlive()).isFalse();
  }

  @Test
  void renewalFailuresAreRetriedUntilTheDeadlineAndTheLossSaysWhy() {
    ManagedLease lease = held(1);
    advance(HEARTBEAT);
    int failures = 0;
    while (lease.checkAlive()) {
      if (!store.lastRenewal().reply().isDone()) {
        store
            .lastRenewal()
            .reply()
            .completeExceptionally(new LeaseStoreUnavailableException("connection refused", null));
        failures++;
      }
      advance(Duration.ofMillis(100));
    }
    advance(Duration.ZERO);

    // From the first renewal at 2.5 s to the deadline at 7.9 s, one attempt every 500 ms.
    assertThat(failures).isBetween(10, 12);
    String expectedCount = failures + " failed attempt(s)";
    assertThat(losses)
        .singleElement()
        .satisfies(
            lost -> {
              assertThat(lost.kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
              assertThat(lost.detail()).contains(expectedCount, "connection refused");
            });
  }

  @Test
  void aRenewalAnsweredLostFiresOnLostWithTheStoresReason() {
    ManagedLease lease = held(1);
    advance(HEARTBEAT);

    LeaseLost reason = new LeaseLost(LeaseLost.Kind.TAKEN_OVER, "node-2 holds it");
    store.lastRenewal().reply().complete(new RenewResult.Lost(reason));
    advance(Duration.ZERO);

    assertThat(lease.checkAlive()).isFalse();
    assertThat(losses).containsExactly(reason);
    assertThat(store.releases).as("no release of a tenure the store says is gone").isEmpty();
  }

  @Test
  void anEventAboutAnOlderTenureIsIgnored() {
    ManagedLease lease = held(5);

    lease.storeReportedLoss(4, new LeaseLost(LeaseLost.Kind.REVOKED, "old"));
    advance(Duration.ZERO);
    assertThat(lease.checkAlive()).isTrue();

    lease.storeReportedLoss(5, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted"));
    advance(Duration.ZERO);
    assertThat(lease.checkAlive()).isFalse();
    assertThat(losses).extracting(LeaseLost::detail).containsExactly("deleted");
  }

  @Test
  void checkAliveIsFalseAtTheDeadlineEvenIfNoTimerEverRuns() throws Exception {
    AtomicLong now = new AtomicLong(42);
    VirtualClock stalled = new VirtualClock(); // never advanced: renewals and timers never run
    ManagedLease lease = lease(settings().build(), LeaseRuntime.of(now::get, stalled, clock));
    CompletableFuture<Boolean> acquired = lease.acquire();
    store.grant(1);
    assertThat(acquired).isCompletedWithValue(true);

    now.addAndGet(WINDOW.toNanos() - 1);
    assertThat(lease.checkAlive()).isTrue();
    now.incrementAndGet();

    ExecutorService threads = Executors.newFixedThreadPool(8);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Boolean>> answers = new CopyOnWriteArrayList<>();
      for (int i = 0; i < 8; i++) {
        answers.add(
            threads.submit(
                () -> {
                  start.await();
                  return lease.checkAlive();
                }));
      }
      start.countDown();
      for (Future<Boolean> answer : answers) {
        assertThat(answer.get(10, TimeUnit.SECONDS)).isFalse();
      }
    } finally {
      threads.shutdownNow();
    }
    assertThat(losses).as("handlers do not run on the caller of checkAlive").isEmpty();
    advance(Duration.ZERO);
    assertThat(losses).as("one loss, however many threads saw it").hasSize(1);
    assertThat(lease.fencingToken()).isEmpty();
  }

  @Test
  void aNewAcquireWaitsUntilTheHandlersOfTheLastLossRan() {
    // Handlers run one second after a loss, so the test can ask again before they ran.
    LeaseRuntime slowCallbacks =
        LeaseRuntime.of(clock, clock, task -> clock.schedule(task, Duration.ofSeconds(1).toNanos()));
    ManagedLease lease = lease(settings().build(), slowCallbacks);
    CompletableFuture<Boolean> first = lease.acquire();
    store.grant(2);
    assertThat(first).isCompletedWithValue(true);

    lease.storeReportedLoss(2, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted"));
    CompletableFuture<Boolean> again = lease.acquire();

    assertThat(store.acquires).as("no acquire sent before the handlers ran").hasSize(1);
    advance(Duration.ofSeconds(1));
    assertThat(losses).hasSize(1);
    assertThat(store.acquires).hasSize(2);
    store.grant(3);
    assertThat(again).isCompletedWithValue(true);
    assertThat(lease.fencingToken()).hasValue(3);
  }

  /** Lease#onLost: a handler registered after a loss is not called for it, however late it is delivered. */
  @Test
  void aHandlerRegisteredAfterALossIsNotCalledForItWhileItsDeliveryWaits() {
    LeaseRuntime slowCallbacks =
        LeaseRuntime.of(clock, clock, task -> clock.schedule(task, Duration.ofSeconds(1).toNanos()));
    ManagedLease lease = lease(settings().build(), slowCallbacks);
    CompletableFuture<Boolean> acquired = lease.acquire();
    store.grant(2);
    assertThat(acquired).isCompletedWithValue(true);

    lease.storeReportedLoss(2, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted"));
    List<LeaseLost> late = new CopyOnWriteArrayList<>();
    lease.onLost(late::add); // after the loss, before its delivery
    advance(Duration.ofSeconds(1));

    assertThat(losses).as("the handler registered before the loss").hasSize(1);
    assertThat(late).as("the handler registered after it").isEmpty();
  }

  /**
   * A local expiry: the deadline passed, the store may hold the record for the rest of the TTL,
   * and that rest is the handlers' margin. The release that lets the next holder in early goes
   * only after them, as for a revocation.
   */
  @Test
  void aLocallyExpiredTenureIsReleasedOnceTheHandlersRanNotBefore() {
    ManagedLease lease = held(4);
    List<Integer> releasesWhileHandling = new CopyOnWriteArrayList<>();
    lease.onLost(lost -> releasesWhileHandling.add(store.releases.size()));

    advance(WINDOW.plusMillis(1)); // no renewal answered: the safe window ran out

    assertThat(losses).singleElement().satisfies(l -> assertThat(l.kind()).isEqualTo(LeaseLost.Kind.EXPIRED));
    assertThat(releasesWhileHandling).as("releases sent before the handler ran").containsExactly(0);
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(4));
  }

  /** The life drawn in ManagedLease's Javadoc, step by step, including both overlaps. */
  @Test
  void thePhaseFollowsTheLifeDrawnInTheJavadoc() {
    ManagedLease lease = lease(settings().build());
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.IDLE);

    CompletableFuture<Boolean> acquired = lease.acquire();
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.ACQUIRING);
    CompletableFuture<Void> released = lease.release(); // waits for the acquire
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.ACQUIRING);
    store.grant(1);
    assertThat(acquired).isCompletedWithValue(true);
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.RELEASING);
    store.releases.get(0).reply().complete(null);
    assertThat(released).isCompletedWithValue(null);
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.IDLE);

    CompletableFuture<Boolean> again = lease.acquire();
    store.grant(2);
    assertThat(again).isCompletedWithValue(true);
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.HELD);
    assertThat(lease).hasToString("Lease{name='jobs', holder=" + lease.holder() + ", HELD, token=2, remaining="
        + lease.remaining() + "}");
    advance(HEARTBEAT); // a renewal in flight keeps it HELD
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.HELD);

    lease.release();
    CompletableFuture<Boolean> afterRelease = lease.acquire(); // waits for the release to settle
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.ACQUIRING);
    store.releases.get(1).reply().complete(null);
    store.grant(3);
    assertThat(afterRelease).isCompletedWithValue(true);
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.HELD);

    advance(WINDOW); // no renewal answered: the deadline passes, a loss
    assertThat(losses).hasSize(1);
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.IDLE);

    lease.close();
    assertThat(lease.phase()).isEqualTo(ManagedLease.Phase.CLOSED);
    assertThat(lease.toString()).endsWith(", CLOSED}");
  }

  @Test
  void releaseDuringAnAcquireReleasesWhatTheAcquireGot() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    CompletableFuture<Void> released = lease.release();
    assertThat(released).isNotDone();

    store.grant(9);

    assertThat(acquired).isCompletedWithValue(true);
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(9));
    assertThat(lease.checkAlive()).isFalse();
    store.releases.get(0).reply().complete(null);
    assertThat(released).isCompletedWithValue(null);
    assertThat(losses).isEmpty();
  }

  @Test
  void closeDuringAnAcquireFailsItAndGivesBackALateGrant() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    lease.close();
    store.grant(4);

    assertThat(acquired).isCompletedExceptionally();
    assertThatThrownBy(acquired::join).hasCauseInstanceOf(IllegalStateException.class);
    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(4));
  }

  @Test
  void retriesOfOneAcquireShareARequestIdAndTheNextAcquireUsesANewOne() {
    ManagedLease lease = lease(settings().acquireRetries(1).operationTimeout(Duration.ofSeconds(1)).build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(Duration.ofSeconds(1)); // the first attempt times out
    advance(Duration.ofMillis(500)); // the retry goes out
    assertThat(store.acquires).hasSize(2);
    store.grant(1);
    assertThat(acquired).isCompletedWithValue(true);
    lease.release();
    store.releases.get(0).reply().complete(null);

    lease.acquire();

    assertThat(store.acquires).extracting(a -> a.request().requestId()).containsExactly(1L, 1L, 2L);
  }

  /** Found in review: release() after a confirming acquire() left the lease held again. */
  @Test
  void releaseAfterAConfirmingAcquireWaitsForItAndThenReleasesForGood() {
    ManagedLease lease = held(1);
    CompletableFuture<Boolean> confirmed = lease.acquire(); // one renewal in flight
    CompletableFuture<Void> released = lease.release();
    assertThat(store.releases).as("release waits for the acquire in progress").isEmpty();

    store.lastRenewal().reply().complete(new RenewResult.Renewed(store.lastRenewal().sentAtNanos()));
    assertThat(confirmed).isCompletedWithValue(true);
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(1));
    store.releases.get(0).reply().complete(null);
    advance(TTL.multipliedBy(3));

    assertThat(released).isCompletedWithValue(null);
    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.acquires).as("no acquisition after the release").hasSize(1);
    assertThat(losses).isEmpty();
  }

  /** Found in review: a loss event that overtook the grant's reply was dropped. */
  @Test
  void aGrantWhoseTenureTheStoreAlreadyReportedGoneIsRefused() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    lease.storeReportedLoss(7, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted in the store"));
    store.grant(7);
    advance(Duration.ZERO);

    assertThatThrownBy(acquired::join).hasMessageContaining("gone before its grant arrived");
    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(7));
  }

  /** Found in review: close() cleared the handlers before a loss it had found was delivered. */
  @Test
  void aLossThatHappenedBeforeCloseIsStillReported() {
    AtomicLong now = new AtomicLong(0);
    VirtualClock stalled = new VirtualClock(); // the process was paused: no timer ran
    ManagedLease lease = lease(settings().build(), LeaseRuntime.of(now::get, stalled, clock));
    lease.acquire();
    store.grant(1);
    now.addAndGet(WINDOW.toNanos() + 1);

    lease.close();
    advance(Duration.ZERO);

    assertThat(losses).singleElement().extracting(LeaseLost::kind).isEqualTo(LeaseLost.Kind.EXPIRED);
  }

  @Test
  void aHandlerThatAcquiresAgainDoesNotWaitForItself() {
    ManagedLease lease = held(1);
    List<CompletableFuture<Boolean>> fromHandler = new CopyOnWriteArrayList<>();
    List<Integer> acquiresSentBeforeTheHandlerReturned = new CopyOnWriteArrayList<>();
    lease.onLost(
        lost -> {
          fromHandler.add(lease.acquire()); // a handler blocking on this must not wait for itself
          acquiresSentBeforeTheHandlerReturned.add(store.acquires.size());
        });

    lease.storeReportedLoss(1, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted"));
    advance(Duration.ZERO);

    assertThat(acquiresSentBeforeTheHandlerReturned).containsExactly(2);
    store.grant(2);
    assertThat(fromHandler.get(0)).isCompletedWithValue(true);
  }

  @Test
  void aBackendThatAnswersNothingFailsTheOperationInsteadOfHangingIt() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    store.lastAcquire().reply().complete(null);

    assertThatThrownBy(acquired::join).hasMessageContaining("answered the acquire with nothing");
  }

  @Test
  void acquireWhileHoldingIsOneRenewalAndKeepsTheToken() {
    ManagedLease lease = held(3);
    advance(Duration.ofSeconds(1));

    CompletableFuture<Boolean> confirmed = lease.acquire();
    CompletableFuture<Boolean> joined = lease.acquire();
    assertThat(store.renewals).as("one round trip for both calls").hasSize(1);
    store.lastRenewal().reply().complete(new RenewResult.Renewed(store.lastRenewal().sentAtNanos()));

    assertThat(confirmed).isCompletedWithValue(true);
    assertThat(joined).isCompletedWithValue(true);
    assertThat(lease.fencingToken()).hasValue(3);
    assertThat(lease.remaining()).isEqualTo(WINDOW);
  }

  /**
   * A store that keeps a revoked record as a tombstone (so that nobody else gets the name before
   * its holder stopped) frees the name when the holder releases that tenure: after the handlers.
   */
  @Test
  void aRevokedTenureIsReleasedOnceTheHandlersRanNotBefore() {
    ManagedLease lease = held(4);
    List<Integer> releasesWhileHandling = new CopyOnWriteArrayList<>();
    lease.onLost(lost -> releasesWhileHandling.add(store.releases.size()));

    lease.storeReportedLoss(4, new LeaseLost(LeaseLost.Kind.REVOKED, "deleted by an operator"));
    advance(Duration.ZERO);

    assertThat(releasesWhileHandling).containsExactly(0);
    assertThat(store.releases).singleElement().satisfies(r -> assertThat(r.tenure().token()).isEqualTo(4));
  }

  /**
   * acquire() while holding asks the store to confirm the tenure as of now: it does not take the
   * answer of a renewal sent before it was called.
   */
  @Test
  void acquireWhileHoldingAsksTheStoreToConfirmAfterARenewalAlreadyInFlight() {
    ManagedLease lease = held(3);
    advance(HEARTBEAT);
    ScriptedStore.Renew periodic = store.lastRenewal();
    assertThat(periodic.confirm()).isFalse();

    CompletableFuture<Boolean> confirmed = lease.acquire();
    assertThat(store.renewals).as("no confirmation while the earlier renewal is in flight").hasSize(1);
    periodic.reply().complete(new RenewResult.Renewed(periodic.sentAtNanos()));
    assertThat(confirmed).as("the earlier renewal does not answer it").isNotDone();
    ScriptedStore.Renew confirmation = store.lastRenewal();
    assertThat(confirmation.confirm()).isTrue();
    confirmation.reply().complete(new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, "deleted")));
    advance(Duration.ZERO);

    assertThat(losses).extracting(LeaseLost::kind).containsExactly(LeaseLost.Kind.REVOKED);
    assertThat(store.acquires).as("a fresh acquisition after the loss").hasSize(2);
    assertThat(store.lastAcquire().request().requestId()).isEqualTo(2);
    store.grant(9);
    assertThat(confirmed).isCompletedWithValue(true);
    assertThat(lease.fencingToken()).hasValue(9);
  }

  @Test
  void aRefusedAcquireRemembersTheHolderTheStoreNamedUntilAnAcquireSucceeds() {
    ManagedLease lease = lease(settings().build());
    assertThat(lease.lastKnownHolder()).isEmpty();

    CompletableFuture<Boolean> refused = lease.acquire();
    store.lastAcquire().reply().complete(new AcquireResult.HeldElsewhere("node-2#0123456789abcdef"));
    assertThat(refused).isCompletedWithValue(false);
    assertThat(lease.lastKnownHolder()).hasValue("node-2#0123456789abcdef");

    CompletableFuture<Boolean> unnamed = lease.acquire();
    store.lastAcquire().reply().complete(new AcquireResult.HeldElsewhere(""));
    assertThat(unnamed).isCompletedWithValue(false);
    assertThat(lease.lastKnownHolder()).as("the store named nobody this time").isEmpty();

    CompletableFuture<Boolean> named = lease.acquire();
    store.lastAcquire().reply().complete(new AcquireResult.HeldElsewhere("node-3#0123456789abcdef"));
    assertThat(named).isCompletedWithValue(false);
    CompletableFuture<Boolean> acquired = lease.acquire();
    store.grant(4);
    assertThat(acquired).isCompletedWithValue(true);
    assertThat(lease.lastKnownHolder()).as("we hold it now").isEmpty();
  }

  // Ghost grants (finding 5): a grant nobody believes in must not keep the name taken.

  @Test
  void aGrantThatArrivesAfterTheAcquireTimedOutIsReleasedAtOnce() {
    ManagedLease lease = lease(settings().operationTimeout(Duration.ofSeconds(1)).build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(Duration.ofSeconds(1)); // the engine gives up: outcome unknown
    assertThatThrownBy(acquired::join).hasCauseInstanceOf(LeaseTimeoutException.class);

    store.grant(7); // ... and then the store's answer arrives: it did grant it

    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.releases)
        .as("the late grant is released, conditional on its token")
        .singleElement()
        .satisfies(r -> assertThat(r.tenure().token()).isEqualTo(7));
  }

  @Test
  void aLateGrantIsNotReleasedWhileARetryOfTheSameRequestMayStillBeginIt() {
    ManagedLease lease =
        lease(settings().acquireRetries(1).operationTimeout(Duration.ofSeconds(1)).build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(Duration.ofSeconds(1)); // the first attempt times out
    advance(Duration.ofMillis(500)); // the retry, with the same request id, goes out
    assertThat(store.acquires).hasSize(2);

    ScriptedStore.grant(store.acquires.get(0), 5); // the first attempt's answer, late
    assertThat(store.releases).as("the retry may still get this very tenure").isEmpty();
    ScriptedStore.grant(store.acquires.get(1), 5); // it does: the store saw a retry

    assertThat(acquired).isCompletedWithValue(true);
    assertThat(lease.fencingToken()).hasValue(5);
    assertThat(store.releases).as("nothing released under the live tenure").isEmpty();
    assertThat(store.abandoned).isEmpty();
  }

  @Test
  void aLateGrantIsReleasedOnceTheRetriesGaveUpToo() {
    ManagedLease lease =
        lease(settings().acquireRetries(1).operationTimeout(Duration.ofSeconds(1)).build());
    CompletableFuture<Boolean> acquired = lease.acquire();
    advance(Duration.ofMillis(1500)); // the first attempt timed out, the retry went out
    ScriptedStore.grant(store.acquires.get(0), 5);
    assertThat(store.releases).isEmpty();

    advance(Duration.ofSeconds(1)); // the retry times out as well: the call fails

    assertThatThrownBy(acquired::join).hasCauseInstanceOf(LeaseTimeoutException.class);
    assertThat(store.releases)
        .singleElement()
        .satisfies(r -> assertThat(r.tenure().token()).isEqualTo(5));
    ScriptedStore.grant(store.acquires.get(1), 5); // the retry's late answer: the same tenure
    assertThat(store.releases).hasSize(2).allSatisfy(r -> assertThat(r.tenure().token()).isEqualTo(5));
    assertThat(lease.checkAlive()).isFalse();
  }

  @Test
  void anAcquireThatNeverGetsAnAnswerIsAbandonedInTheStore() {
    ManagedLease lease = lease(settings().operationTimeout(Duration.ofSeconds(1)).build());
    CompletableFuture<Boolean> acquired = lease.acquire();

    advance(Duration.ofSeconds(1));

    assertThatThrownBy(acquired::join).hasCauseInstanceOf(LeaseTimeoutException.class);
    assertThat(store.abandoned)
        .as("the request given up on, so the store can drop a record it may have made")
        .singleElement()
        .satisfies(r -> assertThat(r.requestId()).isEqualTo(store.acquires.get(0).request().requestId()));
    assertThat(store.acquires.get(0).request().timeout())
        .as("the store is told how long the engine waits, so it can stop retrying then")
        .isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void aRefusedAcquireIsNotAbandoned() {
    ManagedLease lease = lease(settings().build());
    CompletableFuture<Boolean> refused = lease.acquire();

    store.lastAcquire().reply().complete(new AcquireResult.HeldElsewhere("node-2#0123456789abcdef"));

    assertThat(refused).isCompletedWithValue(false);
    assertThat(store.abandoned).isEmpty();
    assertThat(store.releases).isEmpty();
  }

  @Test
  void closeDuringAnAcquireThatNeverGetsAnAnswerAbandonsIt() {
    ManagedLease lease = lease(settings().operationTimeout(Duration.ofSeconds(1)).build());
    lease.acquire();

    lease.closeAsync();
    assertThat(store.abandoned).as("the attempt may still be answered").isEmpty();
    advance(Duration.ofSeconds(1));

    assertThat(store.abandoned).hasSize(1);
  }
}
