package io.leasehold.testkit;

import io.leasehold.LeaseBackend;

/**
 * One process that contends for leases: its own connection to the store under test, and the
 * faults the contract suite does to it. Each contender must fail independently of the others.
 */
public interface Contender extends AutoCloseable {

  /** {@return the process's backend; the suite makes its leases here} */
  LeaseBackend backend();

  /**
   * Partitions the process from the store: traffic both ways stops until {@link #heal()}. Held
   * back or dropped are both fair, as long as nothing gets through; a TCP proxy that stops
   * forwarding does it honestly.
   */
  void cutOff();

  /** Ends the partition. */
  void heal();

  /**
   * Kills the process without any release: its leases stay in the store until the TTL. The
   * suite does not touch its leases afterwards.
   */
  void crash();

  /**
   * Freezes every thread of the process (as {@code SIGSTOP} or a long garbage collection would);
   * time goes on. The suite does not call its leases until {@link #resume()}.
   */
  void pause();

  /** Lets a paused process run again. */
  void resume();

  /** Undoes any fault that still applies, then closes the backend; after a crash, frees resources. */
  @Override
  void close();
}
