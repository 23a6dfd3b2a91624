package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The README's example, compiled and run, so the README never shows code that does not work. */
@Timeout(30)
class ReadmeExampleTest {

  /** Stands for the protected resource of the README: remembers the token of the last write. */
  private final AtomicLong orders = new AtomicLong();

  private void compactNextBatch(long fencingToken) {
    orders.set(fencingToken);
    Thread.onSpinWait();
  }

  private static void cancel(Future<?> work) {
    if (work != null) {
      work.cancel(true);
    }
  }

  /** The example of docs/testing.md and of MemoryStore's Javadoc. */
  @Test
  void theVirtualTimeExampleWorksAsDocumented() {
    VirtualClock clock = new VirtualClock();
    MemoryStore store = MemoryStore.create(clock);
    MemoryBackend node1 = store.connect();
    MemoryBackend node2 = store.connect();
    Lease a = node1.newLease(LeaseSettings.builder("jobs", "node-1").build());
    Lease b = node2.newLease(LeaseSettings.builder("jobs", "node-2").build());
    List<String> events = new ArrayList<>();
    a.onLost(lost -> events.add("node-1 lost it"));

    assertThat(a.acquire().join()).isTrue();
    node1.cutOff();
    clock.advance(Duration.ofSeconds(20));
    events.add(b.acquire().join() ? "node-2 acquired it" : "node-2 was refused");

    assertThat(events).containsExactly("node-1 lost it", "node-2 acquired it");
    assertThat(b.fencingToken().orElseThrow()).isGreaterThan(1);
  }

  @Test
  void theReadmeExampleRunsAndStopsItsWorkWhenTheLeaseIsLost() {
    ExecutorService executor = Executors.newSingleThreadExecutor();
    MemoryStore store = MemoryStore.create();
    try (MemoryBackend backend = store.connect(); // the README opens LeaseBackend.open("memory:")
        Lease lease =
            backend.newLease(
                LeaseSettings.builder("orders-compactor", "node-1")
                    .ttl(Duration.ofSeconds(2))
                    .build())) {
      // --- README example begins
      AtomicReference<Future<?>> work = new AtomicReference<>();
      lease.onLost(lost -> cancel(work.get())); // lost: stop at once, wait for nothing
      if (lease.acquire().join()) { // false: someone else holds it
        long token = lease.fencingToken().orElseThrow();
        work.set(
            executor.submit(
                () -> {
                  while (lease.checkAlive()) { // gate every step on the lease
                    compactNextBatch(token); // the resource rejects stale tokens
                  }
                }));
      }
      // --- README example ends

      await().until(() -> orders.get() == lease.fencingToken().orElseThrow());
      backend.cutOff(); // renewals fail from now on: the lease is lost at its safe deadline
      await().atMost(Duration.ofSeconds(10)).until(() -> work.get().isDone());
      assertThat(lease.checkAlive()).isFalse();
      backend.heal();
    } finally {
      executor.shutdownNow();
    }
  }
}
