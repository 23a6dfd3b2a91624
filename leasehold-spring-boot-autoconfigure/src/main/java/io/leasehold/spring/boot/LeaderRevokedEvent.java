package io.leasehold.spring.boot;

import io.leasehold.recipes.election.LeadershipListener.Why;

/**
 * This process stopped leading a role. Published on the term's own thread once the leader work has
 * ended and before the lease is released, so listeners that stop leader-only work finish before
 * another process can be granted the role. On a loss ({@link Why#LOST}) the lease already ended
 * locally: the event comes within the lease's safety margin, before the store can hand it on,
 * unless a listener or the work ignores interruption.
 */
public final class LeaderRevokedEvent extends LeaseholdLeaderEvent {

  private static final long serialVersionUID = 1L;

  private final Why why;

  LeaderRevokedEvent(LeaseholdLeaderInitiator source, String role, long fencingToken, Why why) {
    super(source, role, fencingToken);
    this.why = why;
  }

  /**
   * {@return why the term ended: {@code LOST} (taken over, expired, revoked), {@code CLOSED} (the
   * initiator was stopped, as on context shutdown), {@code WORK_RETURNED} or {@code WORK_FAILED}}
   */
  public Why getWhy() {
    return why;
  }

  @Override
  public String toString() {
    return "LeaderRevokedEvent{role='" + getRole() + "', token " + getFencingToken() + ", " + why + '}';
  }
}
