package io.leasehold.server.raft;

import java.util.function.LongSupplier;

/**
 * Cluster time, in milliseconds: the time the core's replicated state agrees on, so that every
 * replica decides time-bound questions (how old a call is, since when a session is quiet) the
 * same way, without comparing the clocks of two machines.
 *
 * <p>The leader stamps each entry it appends with its {@linkplain #leaderNow leader clock}: the
 * greatest stamp it had applied when it became leader, counted on by its own monotonic clock. The
 * state's time is the greatest stamp applied. So cluster time runs at the rate of one monotonic
 * clock while a leader leads, and stands still between leaders (and while a leader writes
 * nothing, up to its next entry): between any two entries it advances by at most the real time
 * between them. Whatever is measured in it is measured short, never long.
 *
 * <p>Elsewhere (a follower receiving a client's call) the node {@linkplain #estimate estimates}
 * cluster time from the last stamp it applied and its own clock since then.
 */
public final class ClusterClock {

  private final LongSupplier nanoClock;
  private volatile long appliedMillis;
  private volatile long appliedAtNanos;
  private volatile Lead lead;

  /** This node leads {@code term}; its clock counts from {@code baseMillis} at {@code baseNanos}. */
  private record Lead(long term, long baseMillis, long baseNanos) {}

  public ClusterClock(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
    this.appliedAtNanos = nanoClock.getAsLong();
  }

  /** An entry with this stamp was applied (all replicas). */
  void applied(long stampMillis) {
    if (stampMillis > appliedMillis) {
      appliedMillis = stampMillis;
      appliedAtNanos = nanoClock.getAsLong();
    }
  }

  /** Forgets what was applied and that this node leads (a snapshot replaced the state). */
  void reset(long stampMillis) {
    lead = null;
    appliedMillis = stampMillis;
    appliedAtNanos = nanoClock.getAsLong();
  }

  /**
   * This node became the ready leader of {@code term}, with every committed entry applied: its
   * clock starts from the greatest stamp applied. Only the first call for a term counts.
   */
  void lead(long term) {
    Lead current = lead;
    if (current == null || current.term() != term) {
      lead = new Lead(term, appliedMillis, nanoClock.getAsLong());
    }
  }

  /** {@return whether this node's leader clock runs for {@code term}} */
  boolean leads(long term) {
    Lead current = lead;
    return current != null && current.term() == term;
  }

  /**
   * {@return the leader clock of {@code term} at the monotonic reading {@code nanos}; the estimate
   * if this node does not lead that term}
   */
  long leaderAt(long term, long nanos) {
    Lead current = lead;
    if (current == null || current.term() != term) {
      return estimate();
    }
    return current.baseMillis() + Math.max(0, nanos - current.baseNanos()) / 1_000_000L;
  }

  /** {@return the leader clock of {@code term} now (the stamp for an entry appended now)} */
  long leaderNow(long term) {
    return leaderAt(term, nanoClock.getAsLong());
  }

  /**
   * {@return cluster time as this node estimates it: the last stamp it applied plus its own time
   * since. Slightly behind the leader's clock while entries flow; ahead of it only after a leader
   * change, until the new leader's first entry is applied here}
   */
  long estimate() {
    return appliedMillis + Math.max(0, nanoClock.getAsLong() - appliedAtNanos) / 1_000_000L;
  }

  /** {@return the monotonic clock this clock counts with} */
  long nanos() {
    return nanoClock.getAsLong();
  }
}
