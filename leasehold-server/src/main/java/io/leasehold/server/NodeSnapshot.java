package io.leasehold.server;

import java.util.List;

/**
 * What one node knows of itself and its cluster at one moment, for operators: the HTTP status
 * endpoints ({@code io.leasehold.server.http}) render it. Read from this node's own replica and
 * Raft division, never through the leader, so it answers while there is no leader.
 *
 * @param id the node's id
 * @param address its client endpoint
 * @param role LEADER, FOLLOWER, CANDIDATE, LISTENER or UNKNOWN (not in the group)
 * @param term the node's current Raft term
 * @param leaderId the leader it knows of; empty when none
 * @param leaderReady whether this node leads and has committed an entry of its term
 * @param commitIndex the highest commit index this node knows of (its own or a peer's)
 * @param appliedIndex the last log index this node applied
 * @param peers the group's members with their commit index as this node last heard it
 * @param sessions sessions in this replica
 * @param keys keys in this replica
 * @param leasesHeld named leases held in this replica
 * @param revision this replica's revision
 * @param leases the held leases, by name
 * @param leaderships times this node became a ready leader since it started
 * @param keepAlives keep-alive messages this node answered since it started
 * @param leaseExpiries lease tenures this replica saw end with their session's expiry
 * @param writes client writes this node completed (either way) since it started
 * @param writeNanos their summed latency, from receipt to the answer
 * @param clientConnections client connections open now
 * @param clientConnectionsTotal client connections accepted since the node started
 * @param clientConnectionsRefused client connections closed as soon as they were accepted, over
 *     {@code --max-connections} or {@code --max-connections-per-address}, since the node started
 * @param dataBytes the bytes this replica holds, as {@code --max-data-bytes} counts them: its
 *     data and what it remembers of clients' calls ({@link
 *     io.leasehold.server.replicated.CoreState#quotaBytes()})
 * @param maxDataBytes this node's {@code --max-data-bytes}
 */
public record NodeSnapshot(
    String id,
    String address,
    String role,
    long term,
    String leaderId,
    boolean leaderReady,
    long commitIndex,
    long appliedIndex,
    List<PeerCommit> peers,
    long sessions,
    long keys,
    long leasesHeld,
    long revision,
    List<HeldLease> leases,
    long leaderships,
    long keepAlives,
    long leaseExpiries,
    long writes,
    long writeNanos,
    long clientConnections,
    long clientConnectionsTotal,
    long clientConnectionsRefused,
    long dataBytes,
    long maxDataBytes) {

  /** How far this node's applied state is behind the highest commit index it knows of. */
  public long applyLag() {
    return Math.max(0, commitIndex - appliedIndex);
  }

  /**
   * A member of the group as this node last heard of it.
   *
   * @param id the member's id
   * @param commitIndex its commit index as this node knows it; -1 if unknown
   */
  public record PeerCommit(String id, long commitIndex) {}

  /**
   * A held named lease.
   *
   * @param name the lease's name
   * @param holder its holder ("owner#incarnation")
   * @param token the tenure's fencing token
   * @param sessionId the holder's session
   * @param ttlMillis the session's TTL
   * @param remainingMillis time left before the session expires if not kept alive, as the leader
   *     counts it; -1 on a node that does not lead (only the leader keeps the deadlines)
   */
  public record HeldLease(String name, String holder, long token, long sessionId, long ttlMillis, long remainingMillis) {}
}
