package io.leasehold;

import java.util.Objects;
import java.util.Optional;

/**
 * What a {@link LeaseObserver} is told about one lease name: its state when the observation
 * began, then each change, in the order the store made them.
 *
 * <p>What {@link #holding()} is depends on the type: the holding <em>now</em> for {@link
 * Type#CURRENT} and {@link Type#GAP} (empty: nobody holds the lease); the <em>new</em> holding for
 * {@link Type#ACQUIRED} and {@link Type#TAKEN_OVER}; the holding that <em>ended</em> for {@link
 * Type#RELEASED}, {@link Type#EXPIRED} and {@link Type#REVOKED}.
 *
 * @param type what happened
 * @param name the lease name
 * @param holding the holding the event is about (see above); empty only for a free lease
 * @param detail a human-readable account from the store, for logs; may be empty
 */
public record LeaseEvent(Type type, String name, Optional<LeaseHolding> holding, String detail) {

  /** What happened. */
  public enum Type {
    /**
     * Always the first event of an observation: who holds the lease as the observation begins,
     * or nobody. Every later event follows on from this state.
     */
    CURRENT,
    /** A new tenure began after the lease was free; its token exceeds every earlier one. */
    ACQUIRED,
    /** The holder gave the lease up ({@link Lease#release()} or {@link Lease#close()}). */
    RELEASED,
    /**
     * The store ended the tenure because its TTL passed without a renewal: the holder crashed,
     * paused or was cut off. The holder's own {@link Lease#onLost} fired before, or fires without
     * the holder acting again (its safe deadline is earlier than the store's expiry).
     */
    EXPIRED,
    /**
     * The tenure was ended in the store by someone other than its holder (an operator's delete or
     * revoke). The store may keep the name blocked until the old holder stopped, so an {@link
     * #ACQUIRED} may come only up to one TTL later.
     */
    REVOKED,
    /**
     * Another holder replaced the tenure without the store reporting its end first (a store that
     * lets a contender overwrite an expired record); the holding is the new one.
     */
    TAKEN_OVER,
    /**
     * The store could not deliver the changes since the last event (its history was compacted
     * while the observer was disconnected): some were missed. The holding is the state re-read
     * after the gap, like {@link #CURRENT}; later events follow on from it.
     */
    GAP
  }

  /**
   * Checks that every part is present.
   *
   * @param type what happened
   * @param name the lease name
   * @param holding the holding the event is about
   * @param detail a human-readable account
   */
  public LeaseEvent {
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(holding, "holding");
    Objects.requireNonNull(detail, "detail");
  }

  /**
   * {@return whether nobody holds the lease after this event: it ended a tenure ({@code
   * RELEASED}, {@code EXPIRED}, {@code REVOKED}), or it reports the lease free ({@code CURRENT} or
   * {@code GAP} without a holding). What a waiter observes for, to ask again at once}
   */
  public boolean leavesLeaseFree() {
    return switch (type) {
      case RELEASED, EXPIRED, REVOKED -> true;
      case CURRENT, GAP -> holding.isEmpty();
      case ACQUIRED, TAKEN_OVER -> false;
    };
  }

  /** One line for logs and the command line, e.g. {@code ACQUIRED jobs by node-1#... token 7}. */
  @Override
  public String toString() {
    return type + " " + name
        + holding.map(h -> " " + h.holder() + " token " + h.token()).orElse(" free")
        + (detail.isEmpty() ? "" : " (" + detail + ")");
  }
}
