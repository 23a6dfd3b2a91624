/**
 * The core on Apache Ratis: how a command reaches the replicated log and how the log reaches the
 * state. {@link io.leasehold.server.raft.RaftGateway} writes and reads through Raft (forwarding to
 * the leader, {@link io.leasehold.server.raft.EntryBatcher} packing commands into entries), {@link
 * io.leasehold.server.raft.LeaseStateMachine} applies entries to the replicated state and takes
 * snapshots, and {@link io.leasehold.server.raft.SessionKeeper} with {@link
 * io.leasehold.server.raft.SessionExpiry} keeps the leader's in-memory session deadlines and
 * proposes expiries. Internal: not an API.
 */
package io.leasehold.server.raft;
