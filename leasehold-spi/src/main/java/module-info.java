/**
 * For backend authors: {@link io.leasehold.spi.ManagedLease}, the holder engine that every
 * Leasehold backend shares, and {@link io.leasehold.spi.LeaseStore}, the three store operations a
 * backend implements for it.
 */
module io.leasehold.spi {
  requires transitive io.leasehold;
  requires org.slf4j;

  exports io.leasehold.spi;
}
