package io.leasehold.server;

import io.leasehold.server.edge.ClientIdentity;

/**
 * Identity-based settings of a node (docs/security.md, "Identity and access control").
 *
 * @param rootIdentity with {@link NodeConfig.StartMode#BOOTSTRAP}: turns access control on, with
 *     this certificate subject (RFC 2253) as the root identity, which has every right; null for
 *     none (access control stays off, as before). Ignored on later starts: the cluster's log
 *     holds it
 * @param maxSessionsPerIdentity how many sessions one client identity may hold at once, 1 to
 *     {@value #MAX_SESSIONS_PER_IDENTITY}; a grant beyond it is refused with RESOURCE_EXHAUSTED
 */
public record AccessSettings(String rootIdentity, int maxSessionsPerIdentity) {

  /** Default sessions per identity: far above what a process needs (one per TTL it uses). */
  public static final int DEFAULT_MAX_SESSIONS_PER_IDENTITY = 10_000;

  /** The largest limit that may be set. */
  public static final int MAX_SESSIONS_PER_IDENTITY = 10_000_000;

  /** No root identity, the default limit. */
  public static final AccessSettings DEFAULT = new AccessSettings(null, DEFAULT_MAX_SESSIONS_PER_IDENTITY);

  /**
   * Checks the values and writes the root identity in its normal form.
   *
   * @param rootIdentity a certificate subject, or null
   * @param maxSessionsPerIdentity 1 to {@value #MAX_SESSIONS_PER_IDENTITY}
   */
  public AccessSettings {
    if (rootIdentity != null) {
      ClientIdentity root;
      try {
        root = ClientIdentity.parse(rootIdentity);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--root-identity: " + e.getMessage(), e);
      }
      if (root.isAnonymous()) {
        throw new IllegalArgumentException(
            "--root-identity must be a certificate subject such as \"CN=admin,O=Acme\", not " + ClientIdentity.ANONYMOUS_NAME);
      }
      rootIdentity = root.stored();
    }
    if (maxSessionsPerIdentity < 1 || maxSessionsPerIdentity > MAX_SESSIONS_PER_IDENTITY) {
      throw new IllegalArgumentException(
          "--max-sessions-per-identity must be 1 to " + MAX_SESSIONS_PER_IDENTITY + "; was " + maxSessionsPerIdentity);
    }
  }

  /** {@return a copy with this root identity (null: none)} */
  public AccessSettings withRootIdentity(String root) {
    return new AccessSettings(root, maxSessionsPerIdentity);
  }

  /** {@return a copy with this limit} */
  public AccessSettings withMaxSessionsPerIdentity(int max) {
    return new AccessSettings(rootIdentity, max);
  }
}
