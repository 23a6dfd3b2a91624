package io.leasehold.client;

import io.grpc.Status;
import java.util.concurrent.TimeUnit;

/**
 * How a watch treats the core's limits (docs/security.md, "Limits"): a node that ends a watch
 * whose reader fell behind, or refuses one over its watchers per connection, says so with {@code
 * RESOURCE_EXHAUSTED}. The node still serves, so the watch is opened again on the same node (no
 * failover), from the revision after the last event seen, after a pause that keeps a refused
 * watch from being retried in a tight loop; each time is logged as a warning with the node's
 * words, which name the limit.
 */
final class WatchLimits {

  /** The pause before a watch the core ended over a limit is opened again. */
  static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private WatchLimits() {}

  /** {@return what the core said when it ended a watch over a limit; null for any other end} */
  static String overLimit(Throwable t) {
    if (t == null) {
      return null;
    }
    Status status = Status.fromThrowable(t);
    return status.getCode() == Status.Code.RESOURCE_EXHAUSTED ? String.valueOf(status.getDescription()) : null;
  }
}
