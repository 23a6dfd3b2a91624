package io.leasehold.memory;

import io.leasehold.spi.Scheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The threads of one simulated process. Every timer and callback of a {@link MemoryBackend} runs
 * through this gate, so pausing it freezes the process the way {@code SIGSTOP} or a long garbage
 * collection would (work due meanwhile runs after {@link #resume()}), and crashing it stops the
 * process for good.
 */
final class ProcessGate {

  enum State {
    RUNNING,
    PAUSED,
    CRASHED
  }

  private final Object lock = new Object();
  private final List<Deferred> deferred = new ArrayList<>();
  private State state = State.RUNNING;

  State state() {
    synchronized (lock) {
      return state;
    }
  }

  Scheduler timers(Scheduler delegate) {
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

  Executor callbacks(Executor delegate) {
    return task -> delegate.execute(() -> run(task, delegate));
  }

  /** Runs {@code task} on the caller's thread, or defers it while paused, or drops it if crashed. */
  void run(Runnable task, Executor resubmitTo) {
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

  void pause() {
    synchronized (lock) {
      requireNotCrashed("pause");
      state = State.PAUSED;
    }
  }

  /** Lets the process run again; what fell due while it was paused is handed back to its threads. */
  void resume() {
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

  void crash() {
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
