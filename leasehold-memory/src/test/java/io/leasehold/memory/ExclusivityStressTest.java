package io.leasehold.memory;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.spi.VirtualClock;
import io.leasehold.testkit.ExclusivityChecker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many holders, random faults, one invariant: no two holders ever believe they hold the same lease
 * at once. Application threads keep asking {@code checkAlive()} while their process's timers are
 * paused or cut off, the way starved or partitioned processes behave.
 */
@Timeout(120)
class ExclusivityStressTest {

  private static final List<String> NAMES = List.of("alpha", "beta");

  /** One process and its leases, with the faults the schedule has put on it. */
  private static final class Node {
    final MemoryBackend backend;
    final List<Lease> leases = new ArrayList<>();
    boolean cutOff;
    boolean paused;

    Node(MemoryStore store, String owner, Duration ttl) {
      backend = store.connect();
      for (String name : NAMES) {
        leases.add(
            backend.newLease(
                LeaseSettings.builder(name, owner)
                    .ttl(ttl)
                    .acquireRetries(0)
                    .operationTimeout(ttl.dividedBy(5))
                    .retryInterval(ttl.dividedBy(20))
                    .build()));
      }
    }

    void toggleCut() {
      if (cutOff) {
        backend.heal();
      } else {
        backend.cutOff();
      }
      cutOff = !cutOff;
    }

    void togglePause() {
      if (paused) {
        backend.resume();
      } else {
        backend.pause();
      }
      paused = !paused;
    }

    void heal() {
      if (cutOff) {
        toggleCut();
      }
      if (paused) {
        togglePause();
      }
    }
  }

  /** A seeded random walk on virtual time: the same run every time, 30,000 steps. */
  @Test
  void noTwoHoldersOverlapUnderARandomFaultScheduleOnVirtualTime() {
    Duration ttl = Duration.ofSeconds(5);
    VirtualClock clock = new VirtualClock(MemoryFixture.VIRTUAL_ORIGIN);
    MemoryStore store = MemoryStore.create(clock);
    List<Node> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(new Node(store, "node-" + i, ttl));
    }
    ExclusivityChecker checker = new ExclusivityChecker();
    Random random = new Random(20261130L);
    int crashes = 0;

    for (int step = 0; step < 30_000; step++) {
      int which = random.nextInt(nodes.size());
      Node node = nodes.get(which);
      Lease lease = node.leases.get(random.nextInt(NAMES.size()));
      int action = random.nextInt(100);
      if (action < 40) {
        if (!node.paused) {
          lease.acquire();
        }
      } else if (action < 50) {
        if (!node.paused) {
          lease.release();
        }
      } else if (action < 56) {
        node.toggleCut();
      } else if (action < 62) {
        node.togglePause();
      } else if (action < 63) {
        node.backend.crash();
        nodes.set(which, new Node(store, "node-" + which, ttl));
        crashes++;
      } else {
        clock.advance(Duration.ofMillis(random.nextInt(400)));
      }
      List<Lease> all = new ArrayList<>();
      nodes.forEach(n -> all.addAll(n.leases));
      Collections.shuffle(all, random);
      for (Lease l : all) {
        // Single-threaded and between clock moves, the two views of liveness must agree.
        assertThat(l.checkAlive()).as("checkAlive() of %s", l).isEqualTo(checker.sample(l));
      }
    }
    nodes.forEach(Node::heal);

    checker.assertExclusive();
    assertThat(tokensSeen(checker)).as("tenures that the run went through").isGreaterThan(100);
    assertThat(crashes).isPositive();
    nodes.forEach(n -> n.backend.close());
  }

  /**
   * Real threads: one application thread per process keeps acquiring, sampling and releasing,
   * while a fault thread cuts processes off and pauses their timers. Bounded by operation counts,
   * not by time.
   */
  @Test
  void noTwoHoldersOverlapWithRealThreadsAndRandomFaults() throws Exception {
    // Safety does not depend on timing, so a TTL this short is fair: it makes a run of a
    // second go through dozens of tenures and faults.
    Duration ttl = Duration.ofMillis(20);
    MemoryStore store = MemoryStore.create();
    List<Node> nodes = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      nodes.add(new Node(store, "node-" + i, ttl));
    }
    ExclusivityChecker checker = new ExclusivityChecker();
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong operations = new AtomicLong();
    ExecutorService threads = Executors.newFixedThreadPool(nodes.size() + 1);
    List<Future<?>> workers = new ArrayList<>();
    try {
      for (int i = 0; i < nodes.size(); i++) {
        Node node = nodes.get(i);
        Random random = new Random(i);
        workers.add(
            threads.submit(
                () -> {
                  for (int op = 0; op < 50_000; op++) {
                    operations.incrementAndGet();
                    Lease lease = node.leases.get(random.nextInt(NAMES.size()));
                    int action = random.nextInt(100);
                    // Never wait on a result: a starved process's futures complete only when its
                    // timers run again, and the application thread keeps going meanwhile.
                    if (action < 5) {
                      lease.acquire();
                    } else if (action < 7) {
                      lease.release();
                    }
                    for (Lease l : node.leases) {
                      checker.sample(l);
                    }
                    for (Node other : nodes) {
                      other.leases.forEach(checker::sample);
                    }
                  }
                  return null;
                }));
      }
      Future<?> faults =
          threads.submit(
              () -> {
                Random random = new Random(42);
                while (!done.get()) {
                  Node node = nodes.get(random.nextInt(nodes.size()));
                  synchronized (node) {
                    if (random.nextBoolean()) {
                      node.toggleCut();
                    } else {
                      node.togglePause();
                    }
                  }
                  // A fault lasts for some of the workers' operations, not for a fixed time.
                  long until = operations.get() + random.nextInt(4_000);
                  while (operations.get() < until && !done.get()) {
                    Thread.yield();
                  }
                }
                return null;
              });
      for (Future<?> worker : workers) {
        worker.get(100, TimeUnit.SECONDS);
      }
      done.set(true);
      faults.get(10, TimeUnit.SECONDS);
    } finally {
      done.set(true);
      threads.shutdownNow();
    }
    nodes.forEach(
        n -> {
          synchronized (n) {
            n.heal();
          }
        });

    checker.assertExclusive();
    assertThat(tokensSeen(checker)).as("tenures that the run went through").isGreaterThan(1);
    nodes.forEach(n -> n.backend.close());
  }

  private static int tokensSeen(ExclusivityChecker checker) {
    Set<String> tokens = new HashSet<>();
    for (String line : checker.describe()) {
      tokens.add(line.substring(line.indexOf(": ") + 2, line.indexOf(" held by")));
    }
    return tokens.size();
  }
}
