package io.leasehold.recipes.gated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The gated coordinator on the memory store, on virtual time. Steps go to a queue that the test
 * drains by hand, so "pending" is a state the test controls.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class GatedExecutorTest {

  private final VirtualClock clock = new VirtualClock();
  private final MemoryStore store = MemoryStore.create(clock);
  private final MemoryBackend node = store.connect();
  private final MemoryBackend other = store.connect();
  private final Lease lease =
      node.newLease(LeaseSettings.builder("shards", "coordinator-1").ttl(Duration.ofSeconds(10)).build());
  private final ManualExecutor queue = new ManualExecutor();
  private final GatedExecutor gate = new GatedExecutor(lease, queue);
  private final AtomicInteger allocations = new AtomicInteger();

  @AfterEach
  void close() {
    node.close();
    other.close();
  }

  private <T> T await(CompletableFuture<T> f) {
    for (int i = 0; i < 10_000 && !f.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
    }
    return f.join();
  }

  private CompletableFuture<Integer> allocate() {
    return gate.submit(token -> allocations.incrementAndGet());
  }

  @Test
  void nothingIsServedBeforeTheLeaseIsAcquired() {
    CompletableFuture<Integer> early = allocate();

    assertThat(early).isCompletedExceptionally();
    assertThatThrownBy(early::join)
        .hasCauseInstanceOf(LeaseNotHeldException.class)
        .hasMessageContaining("has not been acquired");
    assertThat(queue.size()).isZero();
  }

  @Test
  void stepsRunWithTheTokenOfTheTenureThatAdmittedThem() {
    assertThat(await(gate.start())).isTrue();
    CompletableFuture<Long> seen = gate.submit(token -> token);

    queue.runAll();

    assertThat(seen).isCompletedWithValue(lease.fencingToken().orElseThrow());
    assertThat(gate.isServing()).isTrue();
  }

  @Test
  void onLossEveryPendingStepIsRejectedAndNoneRuns() {
    assertThat(await(gate.start())).isTrue();
    List<CompletableFuture<Integer>> pending = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      pending.add(allocate());
    }

    store.revoke("shards");
    clock.advance(Duration.ZERO); // the notice and the onLost handler

    assertThat(pending).as("rejected at once, before the executor gets to them")
        .allSatisfy(f -> assertThat(f).isCompletedExceptionally());
    queue.runAll();
    assertThat(allocations).as("no step ran").hasValue(0);
    for (CompletableFuture<Integer> f : pending) {
      assertThat(f).isCompletedExceptionally();
      assertThatThrownBy(f::join)
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseNotHeldException.class)
          .hasMessageContaining("lease 'shards' was lost (REVOKED")
          .satisfies(
              e ->
                  assertThat(((LeaseNotHeldException) e).loss())
                      .map(LeaseLost::kind)
                      .hasValue(LeaseLost.Kind.REVOKED));
    }
    assertThat(gate.isServing()).isFalse();
    assertThatThrownBy(allocate()::join).hasMessageContaining("was lost");
  }

  /**
   * No timer runs in a paused process, so no onLost either: the check right before each step is
   * what keeps a step from running past the deadline.
   */
  @Test
  void aStepWhoseTurnComesAfterTheDeadlineDoesNotRunEvenBeforeOnLost() {
    assertThat(await(gate.start())).isTrue();
    CompletableFuture<Integer> step = allocate();
    Duration left = lease.remaining();

    node.pause();
    clock.advance(left);
    queue.runAll(); // an application thread of the paused process

    assertThat(allocations).hasValue(0);
    assertThatThrownBy(step::join)
        .cause()
        .isInstanceOf(LeaseNotHeldException.class)
        .hasMessageContaining("no longer held");
    node.resume();
  }

  @Test
  void startAnswersFalseWhileAnotherHolderHasTheLease() {
    Lease rival = other.newLease(LeaseSettings.builder("shards", "coordinator-2").build());
    assertThat(await(rival.acquire())).isTrue();

    assertThat(await(gate.start())).isFalse();

    assertThat(gate.isServing()).isFalse();
    assertThatThrownBy(allocate()::join).hasMessageContaining("has not been acquired");
  }

  @Test
  void closeRejectsPendingStepsAndReleasesTheLease() {
    assertThat(await(gate.start())).isTrue();
    CompletableFuture<Integer> pending = allocate();

    gate.close();

    assertThat(pending).isCompletedExceptionally();
    assertThatThrownBy(pending::join).hasMessageContaining("was closed");
    assertThat(lease.checkAlive()).isFalse();
    assertThat(store.lookup("shards")).isEmpty();
    queue.runAll();
    assertThat(allocations).hasValue(0);
  }

  /** An executor whose tasks wait until the test runs them. */
  static final class ManualExecutor implements Executor {
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();

    @Override
    public synchronized void execute(Runnable task) {
      tasks.add(task);
    }

    synchronized int size() {
      return tasks.size();
    }

    void runAll() {
      for (Runnable t; (t = poll()) != null; ) {
        t.run();
      }
    }

    private synchronized Runnable poll() {
      return tasks.poll();
    }
  }
}
