package io.leasehold.server.raft;

import io.leasehold.server.DaemonThreads;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The copies of forwarded calls a node sends again ({@link RaftGateway}): each after its pause, or
 * at once when {@link #now()} says what it waited for is over, whichever comes first, and once
 * only. A leader handing its leadership over refuses calls until the move ends; this node knows
 * the move ended once it applies the new leader's first entry, and a pause of up to 100 ms spent
 * after that would be spent for nothing (a rolling restart's hand-overs).
 */
public final class Resends implements AutoCloseable {

  private final ScheduledExecutorService timer;
  private final Set<Resend> waiting = ConcurrentHashMap.newKeySet();

  Resends(String nodeId) {
    this.timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leasehold-forward-retry-" + nodeId));
  }

  /**
   * Sends {@code send} after {@code pauseNanos}, or at {@link #now()}.
   *
   * @return false if the node is closing: nothing was scheduled, and the caller answers instead
   */
  boolean after(long pauseNanos, Runnable send) {
    Resend resend = new Resend(send);
    waiting.add(resend);
    try {
      timer.schedule(resend, pauseNanos, TimeUnit.NANOSECONDS);
      return true;
    } catch (RejectedExecutionException closing) {
      waiting.remove(resend);
      // close() may have sent it meanwhile: then it is on its way, and the caller must not answer.
      return !resend.claim();
    }
  }

  /** Sends every waiting copy now, on the timer's thread; the caller (Ratis's thread) never waits. */
  void now() {
    for (Resend resend : waiting) {
      try {
        timer.execute(resend);
      } catch (RejectedExecutionException closing) {
        return; // close() sends what is left
      }
    }
  }

  /** {@return how many copies wait to be sent again} */
  int waiting() {
    return waiting.size();
  }

  /**
   * Sends what waits now, on the caller's thread: the node is closing but its Ratis client is still
   * open, so each copy gets an answer (or a refusal) rather than none until its deadline.
   */
  @Override
  public void close() {
    // The tasks shutdownNow returns cancel themselves when run: send from the set instead.
    timer.shutdownNow();
    waiting.forEach(Resend::run);
  }

  private final class Resend implements Runnable {
    private final Runnable send;
    private final AtomicBoolean sent = new AtomicBoolean();

    Resend(Runnable send) {
      this.send = send;
    }

    /** {@return whether this call took the copy's one sending} */
    boolean claim() {
      return sent.compareAndSet(false, true);
    }

    @Override
    public void run() {
      if (claim()) {
        waiting.remove(this);
        send.run();
      }
    }
  }
}
