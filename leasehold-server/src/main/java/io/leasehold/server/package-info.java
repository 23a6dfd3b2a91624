/**
 * One node of Leasehold's consistent core: {@link io.leasehold.server.CoreNode} wires the pieces of
 * the sub-packages together, {@link io.leasehold.server.NodeConfig} says how a node runs and {@link
 * io.leasehold.server.LocalCluster} starts several in one process.
 *
 * <p>The sub-packages follow a request inward: {@code edge} (the gRPC service a client calls, who
 * it is, what it may do and use), {@code raft} (getting a command into the replicated log and
 * answering from it: gateway, state machine, batcher, the leader's session deadlines), {@code
 * replicated} (the deterministic state every replica applies the log to), {@code admin}
 * (membership and leadership changes) and {@code http} (the operator's endpoints). Only this
 * package's {@code CoreNode}, {@code NodeConfig} and {@code LocalCluster} are meant for use outside
 * the project; everything in the sub-packages is internal and may change in any release.
 */
package io.leasehold.server;
