package io.leasehold.spring.boot;

import io.leasehold.recipes.election.LeaderContext;

/**
 * This process became the leader of a role. Published on the term's own thread before the leader
 * work starts; a listener that throws ends the term: a {@link LeaderRevokedEvent} ({@code
 * WORK_FAILED}) follows, then the lease is released and the election contends again. Gate
 * leader-only work on {@link #getContext()}{@code .isLeader()} (local, no I/O, never true past the
 * lease's safe deadline) and pass {@link #getFencingToken()} to the resources it writes; stop it on
 * {@link LeaderRevokedEvent}.
 */
public final class LeaderGrantedEvent extends LeaseholdLeaderEvent {

  private static final long serialVersionUID = 1L;

  private final transient LeaderContext context;

  LeaderGrantedEvent(LeaseholdLeaderInitiator source, String role, LeaderContext context) {
    super(source, role, context.fencingToken());
    this.context = context;
  }

  /** {@return the term: its fencing token, whether it still leads, its lease} */
  public LeaderContext getContext() {
    return context;
  }

  @Override
  public String toString() {
    return "LeaderGrantedEvent{role='" + getRole() + "', token " + getFencingToken() + '}';
  }
}
