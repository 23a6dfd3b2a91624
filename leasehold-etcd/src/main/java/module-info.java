/**
 * The etcd v3 backend ({@code etcd://host:2379[,host:2379]}), on jetcd: one etcd lease per
 * backend and TTL is the session, each held lease is a key attached to it, and the key's create
 * revision is the fencing token.
 */
module io.leasehold.etcd {
  requires transitive io.leasehold.spi;
  requires jetcd.core;
  requires jetcd.common;
  // TLS to etcd: the Netty SSL context jetcd's client builder takes, made the way gRPC wants it.
  requires io.grpc.netty;
  requires io.grpc; // GrpcSslContexts' annotations
  requires io.netty.handler;
  requires org.slf4j;

  exports io.leasehold.etcd;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.etcd.EtcdBackendProvider,
      io.leasehold.etcd.SecureEtcdBackendProvider;
}
