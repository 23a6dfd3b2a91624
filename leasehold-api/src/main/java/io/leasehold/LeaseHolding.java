package io.leasehold;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * One tenure of a lease as an observer sees it: who holds it, with which fencing token, and since
 * when, as the store records them.
 *
 * @param holder the holder as the store names it; backends built on {@code leasehold-spi} write
 *     {@link HolderId#toString()}, {@code owner#incarnation}, but a store shared with other
 *     software may name holders its own way
 * @param token the tenure's fencing token, as {@link Lease#fencingToken()} gives it to the holder
 * @param since when the tenure began, by the store's wall clock; empty where the store does not
 *     record it (the core does not). For display, never for decisions.
 */
public record LeaseHolding(String holder, long token, Optional<Instant> since) {

  /**
   * Checks that every part is present.
   *
   * @param holder the holder as the store names it
   * @param token the fencing token
   * @param since when the tenure began, if the store says
   */
  public LeaseHolding {
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(since, "since");
  }

  /**
   * {@return the owner name: the holder up to its last {@code #}, or the whole holder where the
   * store named it without an incarnation}
   */
  public String owner() {
    int hash = holder.lastIndexOf('#');
    return hash > 0 ? holder.substring(0, hash) : holder;
  }
}
