package io.leasehold.recipes.membership;

import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A member of a group as others see it: who holds one of the group's slots, and the data it
 * joined with. See {@link Membership}.
 *
 * @param memberId the member id it joined with (the slot lease's owner name)
 * @param holder the slot's holder as the store names it ({@code memberId#incarnation} on the
 *     backends of this release): two processes that join with the same id are two holders
 * @param slot which of the group's slots it holds, {@code 0 … maxMembers − 1}
 * @param token the fencing token of its tenure of that slot
 * @param since when it took the slot, where the store records it (the core does not)
 * @param data the data it joined with, in key order; unmodifiable
 */
public record GroupMember(
    String memberId, String holder, int slot, long token, Optional<Instant> since, Map<String, String> data) {

  /**
   * Checks that every part is present and copies the data.
   *
   * @param memberId the member id
   * @param holder the holder as the store names it
   * @param slot the slot
   * @param token the fencing token
   * @param since when it took the slot, if the store says
   * @param data the member's data
   */
  public GroupMember {
    Objects.requireNonNull(memberId, "memberId");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(since, "since");
    data = Collections.unmodifiableMap(new TreeMap<>(data));
  }

  /** One line for logs and the command line, e.g. {@code node-1 slot 3 token 7 {address=…}}. */
  @Override
  public String toString() {
    return memberId + " slot " + slot + " token " + token + since.map(s -> " since " + s).orElse("")
        + (data.isEmpty() ? "" : " " + data);
  }
}
