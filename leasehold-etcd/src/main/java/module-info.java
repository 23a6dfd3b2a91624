/**
 * The etcd v3 backend ({@code etcd://host:2379[,host:2379]}), on jetcd: one etcd lease per
 * backend and TTL is the session, each held lease is a key attached to it, and the key's create
 * revision is the fencing token.
 */
module io.leasehold.etcd {
  requires transitive io.leasehold.spi;
  requires jetcd.core;
  requires jetcd.common;
  requires org.slf4j;

  exports io.leasehold.etcd;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.etcd.EtcdBackendProvider;
}
