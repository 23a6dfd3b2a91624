package io.leasehold.testkit;

import java.time.Duration;

/**
 * What a backend supplies to run {@link LeaseContractSuite}: a store, processes connected to it,
 * and the clock the suite waits on. The suite makes a fresh fixture for each test and closes it
 * afterwards; a fixture may share an expensive server between tests, since every test uses lease
 * names of its own. Several tests run at once (see {@link LeaseContractSuite}), each with its own
 * fixture: whatever fixtures share must be safe to use from several threads.
 */
public interface ContractFixture extends AutoCloseable {

  /** {@return a new process with its own connection to the store} */
  Contender newContender();

  /** {@return the clock leases are measured with, and how the suite lets time pass} */
  TimeControl time();

  /**
   * The TTL the suite gives its leases; every other setting is derived from it. Short enough for
   * a quick suite, long enough that the store and the machine keep up: 10 s on virtual time, about
   * 1 s on real time.
   *
   * @return the TTL
   */
  Duration ttl();

  /**
   * How long the suite waits for something that must happen (an event, a loss, a handover)
   * before it fails: ten TTLs unless a store's test double is known to stall for longer.
   *
   * @return the patience; at least the TTL
   */
  default Duration patience() {
    return ttl().multipliedBy(10);
  }

  /**
   * Deletes a lease's record in the store as an operator would, whoever holds it.
   *
   * @param leaseName the lease name as the suite gave it
   */
  void revokeInStore(String leaseName);

  /**
   * Whether the backend under test declares the optional capability of observing leases ({@link
   * io.leasehold.LeaseBackend#observe}, {@link io.leasehold.LeaseBackend#read}). The suite then
   * holds it to the observer clauses; otherwise it asserts that both throw {@link
   * UnsupportedOperationException} naming the backend, so nothing is silently skipped.
   *
   * @return whether the backend observes leases; {@code false} by default
   */
  default boolean observesLeases() {
    return false;
  }

  /**
   * Whether the backend under test declares the optional capability of attaching keys to a
   * tenure ({@link io.leasehold.Lease#attach}); the suite then holds it to the attach clauses,
   * which also read keys back with {@link io.leasehold.LeaseBackend#read}. Otherwise it asserts
   * that {@code attach} throws {@link UnsupportedOperationException}.
   *
   * @return whether the backend attaches keys; {@code false} by default
   */
  default boolean attachesKeys() {
    return false;
  }

  /** Stops what the fixture started. */
  @Override
  void close();
}
