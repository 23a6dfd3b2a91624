package io.leasehold.spi;

import io.leasehold.Scheduler;
import io.leasehold.Ticker;
import java.time.Duration;
import java.util.Objects;
import java.util.PriorityQueue;

/**
 * Virtual time for tests: a {@link Ticker} that stands still until {@link #advance(Duration)}
 * moves it, and a {@link Scheduler} whose tasks run, in due order, on the thread that advances it.
 * A backend whose runtime is {@code LeaseRuntime.of(clock, clock, clock)} runs every renewal,
 * deadline, retry, timeout and loss handler on virtual time, so a test covers minutes of lease
 * life in milliseconds and never sleeps (the memory backend takes one in {@code
 * MemoryStore.create(VirtualClock)}).
 *
 * <p>Tasks due at once, such as {@link io.leasehold.Lease#onLost} handlers, run on the next
 * {@code advance}, even {@code advance(Duration.ZERO)}. Thread-safe; one advance runs at a time.
 */
public final class VirtualClock implements Ticker, Scheduler {

  private final Object lock = new Object();
  private final Object advancing = new Object();
  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private volatile long now;
  private long sequence;

  /** A clock that reads 0 until advanced. */
  public VirtualClock() {
    this(0);
  }

  /**
   * A clock that starts at {@code originNanos}. Readings only mean something as differences, as
   * with {@link System#nanoTime()}; an origin near {@link Long#MAX_VALUE} proves that code under
   * test compares readings by subtraction and survives the overflow.
   *
   * @param originNanos the first reading
   */
  public VirtualClock(long originNanos) {
    this.now = originNanos;
  }

  @Override
  public long read() {
    return now;
  }

  @Override
  public Cancellable schedule(Runnable task, long delayNanos) {
    Objects.requireNonNull(task, "task");
    Task t;
    synchronized (lock) {
      t = new Task(now + Math.max(0, delayNanos), sequence++, task);
      queue.add(t);
    }
    return () -> t.cancelled = true;
  }

  /**
   * Moves time forward by {@code duration}, running every task that falls due on the way, each
   * at its own due time and in order (tasks scheduled by tasks included). A task may call it too
   * (a task that takes time): the inner call runs what falls due meanwhile, and the outer one goes
   * on from the later time.
   *
   * @param duration how far to move; zero runs what is due now
   * @throws IllegalArgumentException if {@code duration} is negative
   * @throws IllegalStateException if a task threw; time stops at that task's due time
   */
  public void advance(Duration duration) {
    Objects.requireNonNull(duration, "duration");
    if (duration.isNegative()) {
      throw new IllegalArgumentException("duration must not be negative; was " + duration);
    }
    synchronized (advancing) {
      long target = now + duration.toNanos();
      for (; ; ) {
        if (Thread.currentThread().isInterrupted()) {
          throw new IllegalStateException(
              "interrupted while advancing the virtual clock (a test timeout, or tasks that"
                  + " keep rescheduling themselves at the same instant)");
        }
        Task next;
        synchronized (lock) {
          next = queue.peek();
          if (next == null || next.due - target > 0) {
            // A task may have advanced the clock itself, past this call's target (a handler
            // that takes time, in a simulation): time never goes back.
            if (target - now > 0) {
              now = target;
            }
            return;
          }
          queue.poll();
          if (next.due - now > 0) {
            now = next.due;
          }
        }
        if (!next.cancelled) {
          try {
            next.task.run();
          } catch (RuntimeException | Error e) {
            throw new IllegalStateException("a task scheduled on the virtual clock threw", e);
          }
        }
      }
    }
  }

  /** {@return how many tasks are waiting, cancelled ones included until their due time} */
  public int pendingTasks() {
    synchronized (lock) {
      return queue.size();
    }
  }

  @Override
  public String toString() {
    return "VirtualClock{now=" + now + ", pending=" + pendingTasks() + '}';
  }

  private static final class Task implements Comparable<Task> {
    final long due;
    final long sequence;
    final Runnable task;
    volatile boolean cancelled;

    Task(long due, long sequence, Runnable task) {
      this.due = due;
      this.sequence = sequence;
      this.task = task;
    }

    @Override
    public int compareTo(Task other) {
      long byDue = due - other.due;
      if (byDue != 0) {
        return byDue < 0 ? -1 : 1;
      }
      return Long.compare(sequence, other.sequence);
    }
  }
}
