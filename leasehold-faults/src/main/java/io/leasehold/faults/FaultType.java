package io.leasehold.faults;

/** What the nemesis does; one fault at a time, healed before the next. */
enum FaultType {
  /** {@code kill -9} of a core node (the leader about half the time), restarted on its data. */
  KILL_NODE,
  /** {@code SIGSTOP} of a core node, {@code SIGCONT} later. */
  PAUSE_NODE,
  /** {@code SIGSTOP} of the lease holder's process for longer than the TTL. */
  PAUSE_HOLDER,
  /** A core node cut off from every other process, both ways. */
  PARTITION_NODE,
  /** A client (the holder when there is one) cut off from every node, for longer than the TTL. */
  PARTITION_CLIENT
}
