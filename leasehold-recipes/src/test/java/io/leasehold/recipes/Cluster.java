package io.leasehold.recipes;

import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.Scheduler;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.recipes.election.LeaderElection;
import io.leasehold.recipes.election.LeaderWork;
import io.leasehold.recipes.election.LeadershipListener.Why;
import io.leasehold.recipes.election.LeadershipListener;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Processes on one memory store, on virtual time, each running a {@link LeaderElection} whose work
 * marks itself in a shared {@link WorkRegister} while it runs (on a real thread) and blocks until
 * interrupted.
 *
 * <p>Virtual time stands still while real threads react: after each step the cluster waits (with
 * Awaitility, in real time) until every live process that is not the leader has no work running.
 * That models the rule the design states, "the work stops within the safety margin", without
 * which no lease can keep two works apart; it is also where a missing cancellation shows up, as
 * a wait that times out.
 */
public final class Cluster implements AutoCloseable {

  public static final Duration TTL = Duration.ofSeconds(10);
  public static final Duration STEP = Duration.ofMillis(50);

  public final VirtualClock clock = new VirtualClock(Long.MAX_VALUE - Duration.ofSeconds(30).toNanos());
  public final MemoryStore store = MemoryStore.create(clock);
  public final WorkRegister register = new WorkRegister();
  public final List<Node> nodes = new ArrayList<>();
  public final AtomicInteger twoLeadersAtOnce = new AtomicInteger();

  public Scheduler scheduler() {
    return clock; // one virtual clock drives the leases and the recipes
  }

  public static LeaseSettings settings(String owner) {
    return LeaseSettings.builder("singleton", owner).ttl(TTL).build();
  }

  public Node node(String name) {
    return node(name, ctx -> {
      new CountDownLatch(1).await(); // the leader's work: runs until interrupted
    });
  }

  public Node node(String name, LeaderWork inner) {
    Node n = new Node(name, store.connect(), inner);
    nodes.add(n);
    return n;
  }

  /** Lets {@code d} of virtual time pass in steps, sampling who leads after each. */
  public void run(Duration d) {
    for (long done = 0; done < d.toNanos(); done += STEP.toNanos()) {
      clock.advance(STEP);
      settle();
    }
  }

  /** Runs until {@code node} leads, at most {@code atMost} of virtual time. */
  public void runUntilLeader(Node node, Duration atMost) {
    for (long done = 0; !node.election.isLeader() || !node.workRunning(); done += STEP.toNanos()) {
      if (done > atMost.toNanos()) {
        throw new AssertionError(node.name + " did not lead within " + atMost + " of virtual time");
      }
      clock.advance(STEP);
      settle();
    }
  }

  public Node leader() {
    return nodes.stream().filter(n -> n.election.isLeader()).findFirst().orElse(null);
  }

  /** Waits until each live non-leader's work has stopped; then counts leaders. */
  public void settle() {
    await("every process that does not lead has stopped its work")
        .atMost(Duration.ofSeconds(10))
        .pollInSameThread()
        .pollInterval(Duration.ofMillis(1))
        .until(
            () -> {
              clock.advance(Duration.ZERO); // handlers due now run
              return nodes.stream()
                  .allMatch(n -> n.frozen || n.election.isLeader() || !n.workRunning());
            });
    if (nodes.stream().filter(n -> n.election.isLeader()).count() > 1) {
      twoLeadersAtOnce.incrementAndGet();
    }
  }

  /**
   * Closes {@code election} on another thread while this one lets virtual time pass: close()
   * waits for the store, whose answers come on virtual time.
   */
  public void close(LeaderElection election) {
    CompletableFuture<Void> closed = CompletableFuture.runAsync(election::close);
    for (int i = 0; i < 100_000 && !closed.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
      Thread.onSpinWait();
    }
    closed.join();
  }

  @Override
  public void close() {
    for (Node n : nodes) {
      if (!n.frozen) {
        close(n.election);
      }
      n.killWork();
      n.backend.close();
    }
  }

  /** One process: its connection to the store, its lease, its election and its work's thread. */
  public final class Node {
    public final String name;
    public final MemoryBackend backend;
    public final Lease lease;
    public final LeaderElection election;
    public final List<String> events = new CopyOnWriteArrayList<>();
    final AtomicReference<Thread> workThread = new AtomicReference<>();
    public volatile boolean frozen;

    Node(String name, MemoryBackend backend, LeaderWork inner) {
      this.name = name;
      this.backend = backend;
      this.lease = backend.newLease(settings(name));
      this.election =
          LeaderElection.builder(
                  lease,
                  ctx -> {
                    workThread.set(Thread.currentThread());
                    register.enter(name, ctx.fencingToken());
                    try {
                      inner.lead(ctx);
                    } finally {
                      register.exit(name);
                      workThread.set(null);
                    }
                  })
              .scheduler(scheduler())
              .random(new SplittableRandom(name.hashCode()))
              .listener(
                  new LeadershipListener() {
                    @Override
                    public void startedLeading(long token) {
                      events.add("started " + token);
                    }

                    @Override
                    public void stoppedLeading(long token, Why why, String detail) {
                      events.add("stopped " + token + " " + why);
                    }
                  })
              .build();
    }

    public boolean workRunning() {
      return register.isRunning(name);
    }

    /** The process dies: no release, no handler; its work thread dies with it. */
    public void crash() {
      frozen = true;
      backend.crash();
      killWork();
    }

    public void killWork() {
      Thread t = workThread.get();
      if (t != null) {
        t.interrupt();
      }
    }

    @Override
    public String toString() {
      return name;
    }
  }
}
