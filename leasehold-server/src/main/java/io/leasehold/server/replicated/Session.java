package io.leasehold.server.replicated;

import java.util.TreeSet;

/** One session of the replicated state; {@link SessionTable} keeps them, {@link CoreState} changes them. */
final class Session {
  final long id;
  final String owner;
  final long ttlMillis;
  /** The client identity that granted it (stored form: empty for anonymous). */
  final String identity;
  final TreeSet<String> keys = new TreeSet<>();
  /** Cluster time since which no leader has confirmed the session; -1 when not quiet. */
  long quietSince = -1;
  /** Cluster time of the last Heard naming the session; -1 if none. */
  long heardAt = -1;
  /** Keys of this session's tenures an operator revoked: each a tombstone in revokedLeases. */
  final TreeSet<String> revokedKeys = new TreeSet<>();
  /** An operator revoked the session: no longer kept alive, and nothing new attaches to it. */
  boolean revoked;

  Session(long id, String owner, long ttlMillis, String identity) {
    this.id = id;
    this.owner = owner;
    this.ttlMillis = ttlMillis;
    this.identity = identity;
  }

  /**
   * Whether a call by {@code caller} (stored form) may use this session: the identity that
   * granted it, or anyone for a session granted without one (by a plaintext or certificate-less
   * client, or by a build before identities — shared by every such client already, and its
   * holder must keep it across an upgrade to mutual TLS).
   */
  boolean usableBy(String caller) {
    return identity.isEmpty() || identity.equals(caller);
  }
}
