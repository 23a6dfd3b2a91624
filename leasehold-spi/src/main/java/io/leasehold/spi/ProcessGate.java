package io.leasehold.spi;

import io.leasehold.Scheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The threads of one simulated process, for tests of backends. Every timer and callback of a
 * backend made with {@link #wrap(LeaseRuntime)} runs through this gate, so pausing it freezes the
 * process's lease engine the way {@code SIGSTOP} or a long garbage collection would (work due
 * meanwhile runs after {@link #resume()}), and crashing it stops the process for good. A network
 * backend's own client threads are not covered: pair a pause with a black hole ({@code
 * io.leasehold.testkit.TcpProxy}) so they cannot keep a session alive, or freeze a whole JVM.
 */
public final class ProcessGate {

  /** Whether the process runs, is frozen, or is gone. */
  public enum State {
    /** Timers and callbacks run. */
    RUNNING,
    /** Timers and callbacks that fall due are held until resumed. */
    PAUSED,
    /** Nothing runs any more. */
    CRASHED
  }

  /**
   * A runtime whose timers and callbacks run through this gate.
   *
   * @param threads the real threads (or a virtual clock) underneath
   * @return a runtime to make the backend with; closing it does not close {@code threads}
   */
  public LeaseRuntime wrap(LeaseRuntime threads) {
    return LeaseRuntime.of(threads.ticker(), timers(threads.timers()), callbacks(threads.callbacks()));
  }

  private final Object lock = new Object();
  private final List<Deferred> deferred = new ArrayList<>();
  private State state = State.RUNNING;

  /** A running process. */
  public ProcessGate() {}

  /** {@return the process state} */
  public State state() {
    synchronized (lock) {
      return state;
    }
  }

  /**
   * Gates a scheduler.
   *
   * @param delegate the real scheduler
   * @return a scheduler whose tasks wait while paused and never run once crashed
   */
  public Scheduler timers(Scheduler delegate) {
    return (task, delayNanos) -> {
      // A task deferred by a pause must still honour a cancel that comes before it runs.
      Cancelable cancelable = new Cancelable(task);
      Scheduler.Cancellable timer =
          delegate.schedule(() -> run(cancelable, delegate), delayNanos);
      return () -> {
        cancelable.cancelled = true;
        timer.cancel();
      };
    };
  }

  /**
   * Gates an executor.
   *
   * @param delegate the real executor
   * @return an executor whose tasks wait while paused and never run once crashed
   */
  public Executor callbacks(Executor delegate) {
    return task -> delegate.execute(() -> run(task, delegate));
  }

  /** Runs {@code task} on the caller's thread, or defers it while paused, or drops it if crashed. */
  private void run(Runnable task, Executor resubmitTo) {
    synchronized (lock) {
      if (state == State.CRASHED) {
        return;
      }
      if (state == State.PAUSED) {
        deferred.add(new Deferred(task, resubmitTo));
        return;
      }
    }
    task.run();
  }

  /** Freezes the process: what falls due is held back. */
  public void pause() {
    synchronized (lock) {
      requireNotCrashed("pause");
      state = State.PAUSED;
    }
  }

  /** Lets the process run again; what fell due while it was paused is handed back to its threads. */
  public void resume() {
    List<Deferred> due;
    synchronized (lock) {
      requireNotCrashed("resume");
      state = State.RUNNING;
      due = List.copyOf(deferred);
      deferred.clear();
    }
    for (Deferred d : due) {
      d.resubmitTo.execute(() -> run(d.task, d.resubmitTo));
    }
  }

  /** Stops the process for good; held-back work is dropped. */
  public void crash() {
    synchronized (lock) {
      state = State.CRASHED;
      deferred.clear();
    }
  }

  private void requireNotCrashed(String what) {
    if (state == State.CRASHED) {
      throw new IllegalStateException("cannot " + what + " a crashed process; connect a new one");
    }
  }

  private record Deferred(Runnable task, Executor resubmitTo) {}

  private static final class Cancelable implements Runnable {
    private final Runnable task;
    volatile boolean cancelled;

    Cancelable(Runnable task) {
      this.task = task;
    }

    @Override
    public void run() {
      if (!cancelled) {
        task.run();
      }
    }
  }
}
