package io.leasehold.server.raft;

import io.leasehold.server.edge.ClientService;

/**
 * An operator's change to the cluster (a leadership move, a membership change) that cannot be
 * made in its present state — no leader, a change already in progress, the node stopping — and
 * changed nothing. The client protocol answers it with {@code FAILED_PRECONDITION}
 * ({@link ClientService#changeFailed}).
 */
public final class NotNowException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public NotNowException(String message) {
    super(message);
  }
}
