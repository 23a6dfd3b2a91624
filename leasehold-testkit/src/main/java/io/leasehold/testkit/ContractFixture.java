package io.leasehold.testkit;

import java.time.Duration;

/**
 * What a backend supplies to run {@link LeaseContractSuite}: a store, processes connected to it,
 * and the clock the suite waits on. The suite makes a fresh fixture for each test and closes it
 * afterwards; a fixture may share an expensive server between tests, since every test uses lease
 * names of its own.
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
   * Deletes a lease's record in the store as an operator would, whoever holds it.
   *
   * @param leaseName the lease name as the suite gave it
   */
  void revokeInStore(String leaseName);

  /** Stops what the fixture started. */
  @Override
  void close();
}
