package io.leasehold.recipes.election;

/**
 * The leader-only work of a {@link LeaderElection}: runs on its own thread from the moment this
 * process holds the lease.
 *
 * <p>When the lease is lost, or the election is closed, the thread running the work is
 * interrupted. The work must then stop at once: return, or throw (an {@link InterruptedException}
 * included). Blocking calls that honour interruption do this by themselves; a loop should test
 * {@link LeaderContext#isLeader()} before each step, which also turns {@code false} at the local
 * safe deadline when no timer could run. Pass {@link LeaderContext#fencingToken()} to every
 * resource the work writes to, so a write from a paused leader is rejected there.
 */
@FunctionalInterface
public interface LeaderWork {

  /**
   * Does the leader's work. Returning, or throwing, ends this term of leadership: the lease is
   * released and the election contends again after a backoff.
   *
   * @param context the term: its fencing token and whether it still holds
   * @throws Exception whatever the work throws; it is logged, and ends the term
   */
  void lead(LeaderContext context) throws Exception;
}
