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

  /**
   * What a watch does when its stream ended: over a limit, a warning with the node's words and the
   * same node again after {@link #RETRY_NANOS}; otherwise another node ({@link CoreClient#failOver})
   * after {@code retryNanos}.
   *
   * @param t why the stream ended; null when it completed
   * @param client the watch's connection
   * @param log the watch's logger
   * @param what the watch, for the log ("lease watch", "observation of 'x'")
   * @param from the revision the watch opens again from
   * @param retryNanos the watch's own pause before it opens again elsewhere
   * @return the pause before the watch is opened again
   */
  static long afterEnd(Throwable t, CoreClient client, org.slf4j.Logger log, String what, long from, long retryNanos) {
    String overLimit = overLimit(t);
    if (overLimit != null) {
      // The node serves, but ended or refused this watch over one of its limits: watch it again
      // from the revision after the last event seen (history gone: read again, or a GAP).
      log.warn("{}: the core said: {}; watching again from revision {}", what, overLimit, from);
      return RETRY_NANOS;
    }
    log.debug("{} ended ({}); resuming on another node", what, t == null ? "completed" : t.toString());
    client.failOver();
    return retryNanos;
  }

  /** {@return what the core said when it ended a watch over a limit; null for any other end} */
  static String overLimit(Throwable t) {
    if (t == null) {
      return null;
    }
    Status status = Status.fromThrowable(t);
    return status.getCode() == Status.Code.RESOURCE_EXHAUSTED ? String.valueOf(status.getDescription()) : null;
  }
}
