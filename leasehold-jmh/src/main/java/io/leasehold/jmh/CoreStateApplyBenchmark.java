package io.leasehold.jmh;

import io.leasehold.server.replicated.CoreState;
import com.google.protobuf.InvalidProtocolBufferException;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The core's state-machine apply of a named-lease acquire ({@link CoreState#apply}), on a state
 * that already holds {@code leases} leases (see {@link BenchmarkState}), single-threaded as Ratis
 * applies entries.
 *
 * <ul>
 *   <li>{@code acquireNew}: a lease nobody holds, so a new key, a session link, an event and a
 *       dedup entry. Every call grows the state, so it runs in batches of {@value #BATCH}
 *       acquires, each batch on a state restored to {@code leases} keys; the score is per
 *       acquire.</li>
 *   <li>{@code acquireNewParsed}: the same, plus what the state machine's {@code
 *       applyTransaction} adds around it: parsing the command from the log entry's bytes and
 *       serialising the reply.</li>
 *   <li>{@code acquireHeldElsewhere}: a contender asks for a lease another client holds (leader
 *       election's common case); the state does not grow.</li>
 *   <li>{@code acquireRetried}: the same request again, same call id (a client retry after a lost
 *       reply), answered from the deduplication table.</li>
 * </ul>
 */
public class CoreStateApplyBenchmark {

  static final int BATCH = 10_000;

  /** The base state and its snapshot, built once per run. */
  @State(Scope.Benchmark)
  public static class Base {

    /** Leases held before the measured acquires. */
    @Param("100000")
    public int leases;

    BenchmarkState builder;
    byte[] snapshot;

    /**
     * Builds the state through apply, which also warms the apply path up.
     *
     * @throws IOException never (in-memory streams)
     */
    @Setup(Level.Trial)
    public void build() throws IOException {
      builder = new BenchmarkState(leases);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      builder.state.writeSnapshot(out);
      snapshot = out.toByteArray();
    }

    CoreState restore() {
      CoreState state = new CoreState();
      try {
        state.readSnapshot(new ByteArrayInputStream(snapshot));
      } catch (IOException e) {
        throw new IllegalStateException("the benchmark's own snapshot did not load", e);
      }
      return state;
    }
  }

  /** A fresh copy of the base state per batch, and the batch's commands (built unmeasured). */
  @State(Scope.Thread)
  public static class Batch {
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    CoreState state;
    long firstIndex;
    final Command[] commands = new Command[BATCH];
    final byte[][] entries = new byte[BATCH][];
    private int batches;
    private long allocatedBefore;

    /**
     * Restores the base state and builds {@value #BATCH} acquires of leases nobody holds, each
     * from the next client with that client's next call id. Then collects the garbage of the
     * previous batch and of the restore, so that the batch runs with the state in the old
     * generation, as a server's long-lived state is, instead of paying for its promotion.
     *
     * @param base the base state
     */
    @Setup(Level.Iteration)
    public void restore(Base base) {
      state = base.restore();
      firstIndex = base.builder.nextIndex();
      batches++;
      for (int i = 0; i < BATCH; i++) {
        commands[i] =
            base.builder.acquire(
                1 + i % BenchmarkState.CLIENTS, "new-" + batches + "-" + BenchmarkState.leaseName(i), 1);
        entries[i] = commands[i].toByteArray();
      }
      System.gc();
      allocatedBefore = THREADS.getCurrentThreadAllocatedBytes();
    }

    /**
     * Prints what the batch allocated per acquire. JMH's GC profiler cannot tell: in single-shot
     * mode its count includes the restore above.
     */
    @TearDown(Level.Iteration)
    public void allocation() {
      long allocated = THREADS.getCurrentThreadAllocatedBytes() - allocatedBefore;
      System.out.printf("(allocated %,d bytes per acquire) ", allocated / BATCH);
    }
  }

  /** State for the calls that leave the keys as they are. */
  @State(Scope.Thread)
  public static class Steady {
    private static final int RING = 4 * CoreState.REPLIES_KEPT_PER_CLIENT;

    CoreState state;
    long index;
    Command retried;
    final Command[] contended = new Command[RING];
    int next;

    /**
     * Restores the base state; applies one acquire whose retry is measured; builds the
     * contender's requests for a lease client 2 holds (client 1's call ids run round a ring of
     * {@value #RING}, far more than the {@value CoreState#REPLIES_KEPT_PER_CLIENT} replies kept
     * per client, so none is answered from the dedup table).
     *
     * @param base the base state
     */
    @Setup(Level.Trial)
    public void restore(Base base) {
      state = base.restore();
      index = base.builder.nextIndex();
      retried = base.builder.acquire(3, "retried", 1);
      BenchmarkState.expectOk(state.apply(index++, BenchmarkState.TERM, retried));
      String heldByClient2 = BenchmarkState.leaseName(1); // leases go round-robin from client 1
      for (int i = 0; i < RING; i++) {
        contended[i] = base.builder.acquire(1, heldByClient2, 1);
      }
      // Measure the paths the names promise, not a refusal or another branch.
      expectAcquired(state.apply(index++, BenchmarkState.TERM, retried), true);
      expectAcquired(state.apply(index++, BenchmarkState.TERM, contended[next++]), false);
    }

    private static void expectAcquired(CoreState.Applied applied, boolean acquired) {
      BenchmarkState.expectOk(applied);
      try {
        if (AcquireResponse.parseFrom(applied.reply().getOk()).getAcquired() != acquired
            || !applied.events().isEmpty()) {
          throw new IllegalStateException("setup: unexpected answer " + applied);
        }
      } catch (InvalidProtocolBufferException e) {
        throw new IllegalStateException("setup: the reply is not an AcquireResponse", e);
      }
    }
  }

  /**
   * Acquires of leases nobody holds.
   *
   * @param batch the state and commands
   * @return the last reply
   */
  @Benchmark
  @BenchmarkMode(Mode.SingleShotTime)
  @OperationsPerInvocation(BATCH)
  @OutputTimeUnit(TimeUnit.NANOSECONDS)
  public Reply acquireNew(Batch batch) {
    CoreState state = batch.state;
    long index = batch.firstIndex;
    Reply reply = null;
    for (Command command : batch.commands) {
      reply = state.apply(index++, BenchmarkState.TERM, command).reply();
    }
    return reply;
  }

  /**
   * Acquires of leases nobody holds, parsed from log-entry bytes, with the reply serialised.
   *
   * @param batch the state and commands
   * @return the last reply's bytes
   * @throws IOException if a command does not parse (a bug of this benchmark)
   */
  @Benchmark
  @BenchmarkMode(Mode.SingleShotTime)
  @OperationsPerInvocation(BATCH)
  @OutputTimeUnit(TimeUnit.NANOSECONDS)
  public byte[] acquireNewParsed(Batch batch) throws IOException {
    CoreState state = batch.state;
    long index = batch.firstIndex;
    byte[] reply = null;
    for (byte[] entry : batch.entries) {
      Command command = Command.parseFrom(entry);
      reply = state.apply(index++, BenchmarkState.TERM, command).reply().toByteArray();
    }
    return reply;
  }

  /**
   * A contender's acquire of a lease another client holds.
   *
   * @param steady the state and commands
   * @return the reply
   */
  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.NANOSECONDS)
  public CoreState.Applied acquireHeldElsewhere(Steady steady) {
    Command command = steady.contended[steady.next++ & (Steady.RING - 1)];
    return steady.state.apply(steady.index++, BenchmarkState.TERM, command);
  }

  /**
   * A retry of an acquire that was applied already.
   *
   * @param steady the state and command
   * @return the reply
   */
  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.NANOSECONDS)
  public CoreState.Applied acquireRetried(Steady steady) {
    return steady.state.apply(steady.index++, BenchmarkState.TERM, steady.retried);
  }
}
