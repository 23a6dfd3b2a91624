/**
 * The consistent core's wire protocol: the Protocol Buffers messages and gRPC stubs generated from
 * {@code leasehold.proto}, shared by the core's server, its client and the command-line tool.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.leasehold.core.proto {
  // The generated messages extend protobuf's classes and the stubs gRPC's; the future stubs
  // return Guava's ListenableFuture.
  requires transitive com.google.protobuf;
  requires transitive io.grpc;
  requires transitive io.grpc.stub;
  requires transitive io.grpc.protobuf;
  requires transitive com.google.common;

  exports io.leasehold.core.proto;
}
