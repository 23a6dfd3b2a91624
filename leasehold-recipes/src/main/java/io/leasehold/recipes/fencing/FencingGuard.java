package io.leasehold.recipes.fencing;

import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;

/**
 * For the resource a lease protects: accepts a {@linkplain io.leasehold.Lease#fencingToken()
 * fencing token} only if it is not older than the highest token it has seen, so a holder that
 * paused past its TTL and woke up cannot act after a newer holder has.
 *
 * <p>Thread-safe and lock-free: one {@link AtomicLong}, updated by compare-and-set. Equal tokens
 * are accepted (one tenure writes many times); a greater one raises the bar for everyone.
 *
 * <p><b>The check and the effect must be one step.</b> If a stale holder passes the check, pauses,
 * and writes after a newer holder did, the check was worth nothing. Make the check and the write
 * atomic: under the resource's own lock, as below, or by passing the token into the store's own
 * conditional write (for example {@code UPDATE … WHERE fence <= :token}) and using this class only
 * where the resource lives in one process.
 *
 * <pre>{@code
 * final class OrderBook {                       // the protected resource
 *   private final FencingGuard fence = new FencingGuard();
 *   private final List<Order> orders = new ArrayList<>();
 *
 *   synchronized void append(long token, Order order) {
 *     fence.check(token);                       // throws StaleTokenException: a newer holder wrote
 *     orders.add(order);                        // same lock as the check: nothing stale slips in
 *   }
 * }
 *
 * // the holder passes its token with every request:
 * long token = lease.fencingToken().orElseThrow();
 * orderBook.append(token, order);
 * }</pre>
 *
 * <p>Tokens of different leases are unrelated: use one guard per lease name.
 */
public final class FencingGuard {

  /** The highest token accepted; {@link Long#MIN_VALUE} before the first. */
  private final AtomicLong highest = new AtomicLong(Long.MIN_VALUE);

  /** A guard that has seen no token yet: it accepts any. */
  public FencingGuard() {}

  /**
   * Accepts {@code token} if it is at least the highest token accepted so far, and makes it the
   * new highest.
   *
   * @param token a fencing token from the lease's holder
   * @return {@code true} if accepted; {@code false} if a greater token was accepted before
   */
  public boolean tryAccept(long token) {
    for (; ; ) {
      long seen = highest.get();
      if (token < seen) {
        return false;
      }
      if (token == seen || highest.compareAndSet(seen, token)) {
        return true;
      }
    }
  }

  /**
   * As {@link #tryAccept(long)}, but throws when the token is stale.
   *
   * @param token a fencing token from the lease's holder
   * @throws StaleTokenException if a greater token was accepted before
   */
  public void check(long token) {
    if (!tryAccept(token)) {
      throw new StaleTokenException(token, highest.get());
    }
  }

  /** {@return the highest token accepted so far, or empty if none} */
  public OptionalLong highest() {
    long h = highest.get();
    return h == Long.MIN_VALUE ? OptionalLong.empty() : OptionalLong.of(h);
  }

  @Override
  public String toString() {
    return "FencingGuard{highest=" + (highest().isPresent() ? highest().getAsLong() : "none") + '}';
  }
}
