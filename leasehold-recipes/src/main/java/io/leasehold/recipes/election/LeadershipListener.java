package io.leasehold.recipes.election;

import io.leasehold.Scheduler;

/**
 * Told when a {@link LeaderElection} starts and stops leading. Called on the election's {@link
 * Scheduler}, one call at a time and in order, never on the lease's renewal path; a listener
 * that throws is logged and harms nothing else. By the time a listener runs, the state it reports
 * may already have changed again: use {@link LeaderElection#isLeader()} for decisions.
 */
public interface LeadershipListener {

  /**
   * This process became the leader and its work is starting.
   *
   * @param fencingToken the token of the new term
   */
  default void startedLeading(long fencingToken) {}

  /**
   * This process stopped leading: the work has been told to stop (interrupted) or has ended.
   *
   * @param fencingToken the token of the term that ended
   * @param why why it ended
   * @param detail a human-readable account, for logs
   */
  default void stoppedLeading(long fencingToken, Why why, String detail) {}

  /** Why a term of leadership ended. */
  enum Why {
    /** The lease was lost: taken over, expired, revoked. The work was interrupted at once. */
    LOST,
    /** The work returned; the lease was released. */
    WORK_RETURNED,
    /** The work threw; the lease was released. */
    WORK_FAILED,
    /** The election was closed; the work was interrupted and the lease released. */
    CLOSED
  }
}
