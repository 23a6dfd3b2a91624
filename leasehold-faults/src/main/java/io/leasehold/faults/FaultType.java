package io.leasehold.faults;

/**
 * What the nemesis does; one fault at a time, healed before the next. "Node" faults hit a member
 * of the lease store (the managed core, or a managed etcd or ZooKeeper cluster) or of the core that
 * holds the registers, whichever the run has.
 */
enum FaultType {
  /** {@code kill -9} of a node (the leader about half the time), restarted on its data. */
  KILL_NODE,
  /** {@code SIGSTOP} of a node for 1.5–2.5 × TTL, {@code SIGCONT} later. */
  PAUSE_NODE,
  /** {@code SIGSTOP} of the lease store's leader for 2–3 × TTL, while clients hold leases. */
  PAUSE_LEADER_LONG,
  /** A node cut off from every other process, both ways. */
  PARTITION_NODE,
  /** A node cut off from the other nodes only: its clients stay connected to it. */
  ISOLATE_NODE,
  /** {@code SIGSTOP} of a lease holder's process for longer than the TTL. */
  PAUSE_HOLDER,
  /** A client (a holder when there is one) cut off from every node, for longer than the TTL. */
  PARTITION_CLIENT,
  /** {@code kill -9} of a client (a holder when there is one), restarted as a new process. */
  KILL_CLIENT,
  /**
   * An operator deletes a held lease's record in the store (the core's Delete RPC, an etcd key
   * delete, a ZooKeeper znode delete); half the time while the holder is cut off, so that its
   * watch is silent and only the store can keep the name from a second holder.
   */
  OPERATOR_DELETE,
  /** The clock of a client or a node runs fast or slow by up to {@code --clock-skew} for a while. */
  CLOCK_SKEW,
  /**
   * A core node's disk dies and it is replaced online: it is killed and wiped, removed from the
   * membership while it is down, and started again empty with {@code --join} under a new id and
   * added back; half the time the leader is killed in the middle of the add, and the add is run
   * again until it is in force.
   */
  MEMBERSHIP_CHANGE,
  /**
   * For 2–3 × TTL the network keeps a copy of each write of a client (a holder when there is one)
   * to the core and delivers it once more, request bytes unchanged (same client id and call id),
   * 50 ms to 2 × TTL later, to the same node or another; the client never sees the copy's answer.
   * The core must answer a copy from the write's kept reply or refuse it as too late, never apply
   * it twice. Only for the managed core as the lease store (its clients go through a {@link
   * CallRelay}); not offered for etcd, ZooKeeper or a store given by URI.
   */
  LATE_COPY
}
