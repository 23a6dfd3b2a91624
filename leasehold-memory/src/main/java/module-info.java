/**
 * The in-memory reference backend ({@code memory:}): a store in this JVM, with virtual time and
 * fault injection for tests.
 */
module io.leasehold.memory {
  requires transitive io.leasehold.spi;

  exports io.leasehold.memory;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.memory.MemoryBackendProvider;
}
