/**
 * The client edge of a node: how many connections clients may hold open ({@link
 * io.leasehold.server.edge.ConnectionCap}), the gRPC service clients call ({@link
 * io.leasehold.server.edge.ClientService}), who a call comes from ({@link
 * io.leasehold.server.edge.ClientIdentity}), what it may do ({@link
 * io.leasehold.server.edge.AccessControl}) and use ({@link io.leasehold.server.edge.LimitChecks}),
 * and the watch streams it reads ({@link io.leasehold.server.edge.WatchHub}). Every check on a
 * client's input runs here, before anything reaches the log. Internal: not an API.
 */
package io.leasehold.server.edge;
