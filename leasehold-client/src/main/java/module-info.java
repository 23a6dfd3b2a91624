/**
 * The {@code leasehold://} and {@code leaseholds://} backends: the Lease contract on Leasehold's
 * consistent core, and {@link io.leasehold.client.CoreClient}, a small client for the core's
 * sessions, keys and watches.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.leasehold.client {
  requires transitive io.leasehold.spi;
  requires transitive io.leasehold.core.proto;
  requires io.grpc.netty.shaded;
  requires org.slf4j;

  exports io.leasehold.client;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.client.CoreBackendProvider,
      io.leasehold.client.SecureCoreBackendProvider;
}
