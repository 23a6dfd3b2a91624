package io.leasehold;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A lease as the store holds it at one moment, read by {@link LeaseBackend#read(String)}.
 *
 * @param name the lease name
 * @param holding the current tenure; empty when nobody holds the lease
 * @param attached the keys the holder {@linkplain Lease#attach attached} to that tenure, by key;
 *     empty when the lease is free. Unmodifiable, in key order.
 */
public record LeaseState(String name, Optional<LeaseHolding> holding, Map<String, String> attached) {

  /**
   * Checks that every part is present and copies the keys.
   *
   * @param name the lease name
   * @param holding the current tenure, if any
   * @param attached the keys attached to it
   */
  public LeaseState {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(holding, "holding");
    attached = Collections.unmodifiableMap(new TreeMap<>(attached));
  }
}
