package io.leasehold.core.proto;

/**
 * The values of {@code Event.cause}: why the cluster deleted a key. Part of the protocol — the
 * node writes them, the client tells a release from an expiry or a revocation by them — so both
 * sides use these constants, never their own copies of the strings.
 */
public final class DeleteCauses {

  /** The holder released the lease. */
  public static final String RELEASED = "released";

  /** The session expired (also where an operator revoked it: it ends by expiry). */
  public static final String SESSION_EXPIRED = "session expired";

  /** The session's own client closed it: its keys were given up, a release to watchers. */
  public static final String SESSION_CLOSED = "session closed by its holder";

  /** The same holder acquired the lease again with a new session: the old tenure's key went. */
  public static final String REPLACED = "replaced by a new tenure of the same holder";

  /**
   * An operator deleted a held lease's key (a revocation): the holder is told it lost the lease,
   * and nobody else gets the name until the holder releases or its session ends.
   */
  public static final String REVOKED_BY_OPERATOR = "revoked by an operator";

  private DeleteCauses() {}
}
