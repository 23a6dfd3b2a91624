package io.leasehold.recipes.election;

import io.leasehold.Lease;

/** One term of leadership, as the {@link LeaderWork} sees it. Thread-safe. */
public interface LeaderContext {

  /** {@return the fencing token of this term: pass it to every resource the work writes to} */
  long fencingToken();

  /**
   * Whether this term still holds the lease: local, no I/O, as cheap as {@link
   * Lease#checkAlive()}. It is {@code false} once the lease is lost, released, or held in a newer
   * term, and never {@code true} past the lease's local safe deadline. Like {@code checkAlive()}
   * it can be out of date a moment after it answers; the fencing token protects the rest.
   *
   * @return whether the work may go on
   */
  boolean isLeader();

  /** {@return the lease this election holds} */
  Lease lease();
}
