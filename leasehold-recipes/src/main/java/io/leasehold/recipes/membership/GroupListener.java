package io.leasehold.recipes.membership;

import io.leasehold.LeaseEvent;
import io.leasehold.Scheduler;

/**
 * Told of joins and leaves by a {@link GroupView}. Calls come one at a time, in order (for each
 * slot, a member's {@code joined} before its {@code left}), on the view's {@link Scheduler};
 * a listener that throws is logged and stays registered.
 */
public interface GroupListener {

  /**
   * A member joined, or was already a member when the view started.
   *
   * @param member the member, with its data
   */
  default void joined(GroupMember member) {}

  /**
   * A member left.
   *
   * @param member the member as it was reported by {@link #joined}
   * @param why {@code RELEASED} (it left), {@code EXPIRED} (it crashed, paused or was cut off: its
   *     TTL passed), {@code REVOKED} (an operator removed it), {@code TAKEN_OVER} or {@code GAP}
   *     (the view missed changes and found another holder, or none, when it read the slot again)
   */
  default void left(GroupMember member, LeaseEvent.Type why) {}
}
