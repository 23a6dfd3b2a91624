package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.spi.VirtualClock;
import io.leasehold.testkit.ExclusivityChecker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the contract suite cannot reach through a generic fixture. */
@Timeout(60)
class MemoryBackendTest {

  private static final Duration TTL = Duration.ofSeconds(10);

  private final VirtualClock clock = new VirtualClock(MemoryFixture.VIRTUAL_ORIGIN);
  private final MemoryStore store = MemoryStore.create(clock);
  private final MemoryBackend nodeA = store.connect();
  private final MemoryBackend nodeB = store.connect();

  @AfterEach
  void close() {
    nodeA.close();
    nodeB.close();
  }

  private static LeaseSettings.Builder settings(String owner) {
    return LeaseSettings.builder("jobs", owner)
        .ttl(TTL)
        .acquireRetries(0)
        .operationTimeout(Duration.ofSeconds(5))
        .retryInterval(Duration.ofMillis(100));
  }

  private <T> T await(CompletableFuture<T> future) {
    for (int i = 0; i < 10_000 && !future.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
    }
    return future.join();
  }

  @Test
  void memoryColonOpensAFreshStore() {
    try (LeaseBackend first = LeaseBackend.open("memory:");
        LeaseBackend second = LeaseBackend.open("MEMORY:")) {
      Lease a = first.newLease(LeaseSettings.builder("x", "a").build());
      Lease b = second.newLease(LeaseSettings.builder("x", "b").build());

      assertThat(a.acquire().join()).isTrue();
      assertThat(b.acquire().join()).as("another store, so no contention").isTrue();
      assertThat(first.uri()).isEqualTo("memory:");
    }
  }

  @Test
  void aMemoryUriWithAnAddressIsRejectedWithTheExpectedForm() {
    assertThatThrownBy(() -> LeaseBackend.open("memory://localhost"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("use 'memory:'");
  }

  /**
   * The store starts the TTL when it receives a renewal; a holder that counted from when the reply
   * arrived would act after the store could have handed the lease on.
   */
  @Test
  void slowRepliesNeverStretchTheHoldersDeadline() {
    Duration slow = Duration.ofMillis(2500);
    Lease a = nodeA.newLease(settings("a").operationTimeout(Duration.ofSeconds(4)).build());
    Lease b = nodeB.newLease(settings("b").build());
    ExclusivityChecker checker = new ExclusivityChecker();
    assertThat(await(a.acquire())).isTrue();

    // Renewals go out every 3.33 s and each reply takes 2.5 s, more than ttl − safe window
    // (1.1 s). After the reply to the renewal of 3.33 s has come back, cut node A off: it was the
    // last renewal the store saw, so the store may hand the lease on at 13.33 s.
    nodeA.delayReplies(slow);
    for (int step = 1; step <= 2_000; step++) {
      clock.advance(Duration.ofMillis(10));
      if (step == 600) {
        nodeA.cutOff();
      }
      if (step % 50 == 0) {
        b.acquire();
      }
      checker.sample(b); // the newer holder first: a live sample of A after it proves overlap
      checker.sample(a);
    }
    nodeA.heal();

    assertThat(b.checkAlive()).isTrue();
    checker.assertExclusive();
  }

  @Test
  void aRetriedAcquireAfterALostReplyMakesOneTenure() {
    Lease a = nodeA.newLease(settings("a").acquireRetries(1).operationTimeout(Duration.ofSeconds(1)).build());
    nodeA.cutOff();
    CompletableFuture<Boolean> acquired = a.acquire();
    clock.advance(Duration.ofMillis(1050)); // the first attempt timed out, the retry is queued too
    nodeA.heal(); // both attempts reach the store; the first reply is too late to count

    assertThat(await(acquired)).isTrue();
    long token = a.fencingToken().orElseThrow();
    assertThat(store.lookup("jobs")).hasValueSatisfying(l -> assertThat(l.token()).isEqualTo(token));
    Lease probe = nodeB.newLease(LeaseSettings.builder("probe", "b").ttl(TTL).build());
    assertThat(await(probe.acquire())).isTrue();
    assertThat(probe.fencingToken().orElseThrow())
        .as("the next token: the retry made no second tenure")
        .isEqualTo(token + 1);
  }

  /**
   * Finding 5: the store granted an acquire whose reply came after the engine had given up on it.
   * Nobody believes they hold that tenure, so the engine gives it back as soon as the late answer
   * arrives, and another owner gets the lease long before the TTL could have expired it.
   */
  @Test
  void aGrantWhoseReplyCameAfterTheAcquireTimedOutIsGivenBackAtOnce() {
    Lease a = nodeA.newLease(settings("a").operationTimeout(Duration.ofSeconds(1)).build());
    Lease b = nodeB.newLease(settings("b").build());
    nodeA.delayReplies(Duration.ofSeconds(2)); // the request arrives at once, its reply in 2 s
    CompletableFuture<Boolean> acquired = a.acquire();

    clock.advance(Duration.ofSeconds(1));
    assertThat(acquired).as("the engine gave up: outcome unknown").isCompletedExceptionally();
    assertThat(store.lookup("jobs")).as("yet the store granted it").isPresent();
    clock.advance(Duration.ofSeconds(1)); // the late grant reaches node A

    assertThat(await(b.acquire()))
        .as("another owner's acquire 2 s into a TTL of " + TTL.toSeconds() + " s")
        .isTrue();
    assertThat(a.checkAlive()).isFalse();
  }

  /**
   * Redisson #2665: at 100% CPU the renewal thread starves while application threads still run.
   * The application must see the lease as lost once the deadline passes, even though no timer
   * told it so.
   */
  @Test
  void aStarvedRenewalThreadCannotKeepTheLeaseAliveForTheApplication() {
    Lease a = nodeA.newLease(settings("a").build());
    Lease b = nodeB.newLease(settings("b").build());
    ExclusivityChecker checker = new ExclusivityChecker();
    assertThat(await(a.acquire())).isTrue();
    Duration left = a.remaining();

    nodeA.pause(); // its timers stall; this test thread plays an application thread of node A
    clock.advance(left.minusMillis(1));
    assertThat(a.checkAlive()).isTrue();
    clock.advance(Duration.ofMillis(1));
    assertThat(a.checkAlive()).as("at the deadline, with no timer run").isFalse();
    for (int step = 0; step < 1_000; step++) {
      b.acquire();
      clock.advance(Duration.ofMillis(10));
      checker.sample(b);
      checker.sample(a);
    }

    assertThat(b.checkAlive()).isTrue();
    checker.assertExclusive();
  }

  /**
   * A local expiry happens when the holder was starved: its deadline passed while the store still
   * holds the record for the rest of the TTL. That rest is the margin in which the loss handlers
   * stop the owner's work, so the name must stay taken until they returned; only then may the
   * holder's release let the next owner in early. Callbacks run on the virtual clock here, so the
   * handler "blocks" by letting virtual time pass inside it, and asks for the lease meanwhile.
   */
  @Test
  void aLocalExpiryLetsTheNextOwnerInOnlyAfterTheLossHandlersReturned() {
    Lease a = nodeA.newLease(settings("a").build());
    Lease b = nodeB.newLease(settings("b").build());
    assertThat(await(a.acquire())).isTrue();
    List<Boolean> acquiredWhileHandling = new ArrayList<>();
    a.onLost(
        reason -> {
          for (int i = 0; i < 5; i++) { // the owner's work winding down, for 0.5 s
            acquiredWhileHandling.add(await(b.acquire()));
            clock.advance(Duration.ofMillis(100));
          }
        });

    Duration left = a.remaining();
    nodeA.pause(); // starved: its timers do not run
    clock.advance(left.plusMillis(1)); // past the safe deadline, short of the store's TTL
    assertThat(left.plusMillis(600)).as("the store's TTL does not pass during the test").isLessThan(TTL);
    nodeA.resume();
    clock.advance(Duration.ZERO); // what fell due runs: the engine finds its deadline gone

    assertThat(acquiredWhileHandling)
        .as("another owner's acquires while the first one's loss handler still ran")
        .containsExactly(false, false, false, false, false);
    assertThat(await(b.acquire())).as("after the handler, the release let the next owner in").isTrue();
  }

  /** Found in review: a release still pending when its backend closed was never answered. */
  @Test
  void closingTheBackendAnswersAReleaseTheStoreHasNotConfirmed() {
    MemoryBackend node = MemoryStore.create().connect();
    Lease lease =
        node.newLease(
            LeaseSettings.builder("jobs", "a")
                .ttl(Duration.ofSeconds(2))
                .operationTimeout(Duration.ofMillis(200))
                .build());
    assertThat(lease.acquire().join()).isTrue();
    node.delayReplies(Duration.ofSeconds(30));
    CompletableFuture<Void> released = lease.release();

    node.close();

    assertThat(released).isCompletedExceptionally();
    assertThatThrownBy(released::join).hasMessageContaining("backend closed before the store confirmed");
  }

  @Test
  void anOperatorRevocationReachesTheHolderAtOnce() {
    Lease a = nodeA.newLease(settings("a").build());
    assertThat(await(a.acquire())).isTrue();

    store.revoke("jobs");

    clock.advance(Duration.ZERO);
    assertThat(a.checkAlive()).as("without waiting for the next renewal").isFalse();
  }

  @Test
  void aCrashedProcessCannotBePausedOrResumed() {
    nodeA.crash();

    assertThatThrownBy(nodeA::pause).hasMessageContaining("crashed");
    assertThatThrownBy(nodeA::resume).hasMessageContaining("crashed");
    assertThatThrownBy(() -> nodeA.delayReplies(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void badAttachedKeysAndValuesAreRefusedNamingTheRuleAndNothingIsSent() {
    Lease a = nodeA.newLease(settings("node-a").build());
    assertThat(await(a.acquire())).isTrue();

    assertThatThrownBy(() -> a.attach("", "v"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("attached key must be 1 to 128 characters; was 0");
    assertThatThrownBy(() -> a.attach("a/b", "v"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("attached key may contain only A-Z a-z 0-9 . _ -; found '/' at index 1 of 'a/b'");
    assertThatThrownBy(() -> a.attach("k", "x".repeat(4097)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("attached value must be at most 4096 characters; was 4097");
    assertThat(await(nodeB.read("jobs")).attached()).isEmpty();
  }

  @Test
  void observingAnInvalidNameOrOnAClosedBackendIsRefused() {
    assertThatThrownBy(() -> nodeA.observe(" jobs", e -> {}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("name must not start or end with white space");
    nodeB.close();
    assertThatThrownBy(() -> nodeB.observe("jobs", e -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is closed");
  }
}
