package io.leasehold.jmh;

import io.leasehold.Lease;
import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * The holder's local reads on a held lease: {@code checkAlive()}, {@code remaining()} and {@code
 * fencingToken()} of a {@code ManagedLease} (the engine every backend wraps) on the in-memory
 * store and the real system ticker, next to a bare {@link System#nanoTime()}, the floor that
 * every deadline check pays.
 *
 * <p>{@code checkAliveVirtualClock} is the same engine on a {@link VirtualClock}, whose reading is
 * one volatile field: what {@code checkAlive()} costs besides the clock.
 *
 * <p>The {@code *2Threads} variants run two threads on the one lease (shared state, as when
 * several workers of a process guard their steps with the same lease). Nothing writes the shared
 * fields while they run except a renewal every {@code ttl / 3} = 10 s.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CheckAliveBenchmark {

  private static final LeaseSettings SETTINGS =
      LeaseSettings.builder("jmh-check-alive", "jmh").ttl(Duration.ofSeconds(30)).build();

  /** A lease held on the memory store and the system ticker, renewed by real timers. */
  @State(Scope.Benchmark)
  public static class Held {
    private MemoryBackend backend;
    Lease lease;

    /** Acquires the lease; a TTL of 30 s keeps it held, with real renewals, through every run. */
    @Setup(Level.Trial)
    public void acquire() {
      backend = MemoryStore.create().connect();
      lease = backend.newLease(SETTINGS);
      if (!lease.acquire().join()) {
        throw new IllegalStateException("the benchmark lease was not acquired on a fresh store");
      }
    }

    /**
     * Fails the run if the lease was lost: the figures would then measure the cheaper path of a
     * lease that is over, not the held one.
     */
    @TearDown(Level.Iteration)
    public void stillHeld() {
      if (!lease.checkAlive()) {
        throw new IllegalStateException(
            "the benchmark lease was lost during the iteration (process starved for 30 s?)");
      }
    }

    /** Releases the lease and stops the backend's threads. */
    @TearDown(Level.Trial)
    public void release() {
      lease.close();
      backend.close();
    }
  }

  /** A lease held on the memory store on virtual time, which stands still while measured. */
  @State(Scope.Benchmark)
  public static class HeldOnVirtualClock {
    private final VirtualClock clock = new VirtualClock();
    private MemoryBackend backend;
    Lease lease;

    /** Acquires the lease, turning the virtual clock (by zero) until the store answered. */
    @Setup(Level.Trial)
    public void acquire() {
      backend = MemoryStore.create(clock).connect();
      lease = backend.newLease(SETTINGS);
      CompletableFuture<Boolean> acquired = lease.acquire();
      for (int i = 0; i < 100 && !acquired.isDone(); i++) {
        clock.advance(Duration.ZERO);
      }
      if (!acquired.getNow(false) || !lease.checkAlive()) {
        throw new IllegalStateException("the benchmark lease was not acquired on a fresh store");
      }
    }

    /** Closes the backend; on virtual time nothing is left running. */
    @TearDown(Level.Trial)
    public void release() {
      backend.close();
    }
  }

  /**
   * The clock read alone.
   *
   * @return the reading
   */
  @Benchmark
  public long nanoTime() {
    return System.nanoTime();
  }

  /**
   * The hot path.
   *
   * @param held the lease
   * @return whether the lease is held
   */
  @Benchmark
  public boolean checkAlive(Held held) {
    return held.lease.checkAlive();
  }

  /**
   * Time left until the local safe deadline.
   *
   * @param held the lease
   * @return the time left
   */
  @Benchmark
  public Duration remaining(Held held) {
    return held.lease.remaining();
  }

  /**
   * The token of the current tenure.
   *
   * @param held the lease
   * @return the token
   */
  @Benchmark
  public OptionalLong fencingToken(Held held) {
    return held.lease.fencingToken();
  }

  /**
   * The hot path without the cost of a real clock.
   *
   * @param held the lease on virtual time
   * @return whether the lease is held
   */
  @Benchmark
  public boolean checkAliveVirtualClock(HeldOnVirtualClock held) {
    return held.lease.checkAlive();
  }

  /**
   * The clock read alone, on two threads at once.
   *
   * @return the reading
   */
  @Benchmark
  @Threads(2)
  public long nanoTime2Threads() {
    return System.nanoTime();
  }

  /**
   * The hot path, on two threads sharing the lease.
   *
   * @param held the lease
   * @return whether the lease is held
   */
  @Benchmark
  @Threads(2)
  public boolean checkAlive2Threads(Held held) {
    return held.lease.checkAlive();
  }
}
