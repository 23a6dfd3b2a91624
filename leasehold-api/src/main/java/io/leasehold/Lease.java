package io.leasehold;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * Time-bounded, exclusive ownership of a named resource, kept by one holder and cleaned up by the
 * backing store when that holder crashes, stalls or is cut off.
 *
 * <p>A {@code Lease} object is made by {@link LeaseBackend#newLease(LeaseSettings)} for one lease
 * name and one holder: the {@linkplain LeaseSettings#owner() owner name} plus an incarnation id
 * chosen when the object is made (see {@link HolderId}). Two {@code Lease} objects therefore never
 * share a tenure, even when they carry the same owner name: a restarted process is a new holder.
 * All methods are thread-safe.
 *
 * <h2>The rule every implementation keeps</h2>
 * The holder computes a <em>local safe deadline</em> on the monotonic clock: the time at which it
 * <em>sent</em> the last renewal that succeeded, plus {@code ttl × (1 − maxClockDrift)}, minus
 * {@code safetyMargin}. The store measures expiry from when it <em>received</em> that renewal. So
 * when clocks run at rates within {@code maxClockDrift} of each other, the holder always stops
 * first: {@link #checkAlive()} turns {@code false} and {@link #onLost} fires before the store can
 * hand the lease to anyone else.
 *
 * <p>A time-to-live cannot tell a crashed holder from a paused one. If the process can pause for
 * longer than the TTL (a long garbage collection, a suspended virtual machine), a holder may wake
 * up and act after another holder has started. Choose a TTL longer than the worst pause you
 * expect, and pass the {@linkplain #fencingToken() fencing token} to the protected resource so it
 * can reject a holder that woke up too late.
 *
 * <h2>Typical use</h2>
 * <pre>{@code
 * try (LeaseBackend backend = LeaseBackend.open("memory:");
 *      Lease lease = backend.newLease(LeaseSettings.builder("orders-compactor", "node-1").build())) {
 *   lease.onLost(lost -> worker.cancel(true));          // stop at once, wait for nothing
 *   if (lease.acquire().join()) {
 *     long token = lease.fencingToken().orElseThrow();
 *     worker = executor.submit(() -> compactOrders(token));
 *   }
 * }
 * }</pre>
 */
public interface Lease extends AutoCloseable {

  /** {@return the lease name: which resource this lease guards} */
  String name();

  /** {@return the owner name this lease was made with; shorthand for {@code holder().owner()}} */
  String owner();

  /** {@return who this lease object acquires as: the owner name plus this object's incarnation id} */
  HolderId holder();

  /** {@return the settings this lease was made with} */
  LeaseSettings settings();

  /**
   * Tries to become the holder.
   *
   * <p>The future completes
   * <ul>
   *   <li>{@code true} once the store confirmed that this holder now holds the lease. Renewal then
   *       runs in the background every {@linkplain LeaseSettings#heartbeatInterval() heartbeat
   *       interval} until {@link #release()}, {@link #close()} or a loss.</li>
   *   <li>{@code false} when another holder definitely holds it, after up to
   *       {@linkplain LeaseSettings#acquireRetries() acquireRetries} further attempts spaced by
   *       {@linkplain LeaseSettings#retryInterval() retryInterval}.</li>
   *   <li>exceptionally with a {@link LeaseException} when the outcome is unknown: the store could
   *       not be reached or did not answer within the
   *       {@linkplain LeaseSettings#operationTimeout() operation timeout} on the last attempt. An
   *       attempt whose reply was lost may still have taken the lease in the store; a later
   *       {@code acquire()} from this object recognises it as its own, and otherwise the store
   *       lets it expire after the TTL.</li>
   * </ul>
   *
   * <p>Called while this object already holds the lease, it asks the store to confirm the tenure
   * (one round trip, which also renews it) and completes {@code true} with the same tenure and
   * fencing token; use this before an irreversible step. If the store answers that the tenure is
   * gone, {@link #onLost} fires and a fresh acquisition follows. Concurrent calls on one object
   * share one attempt. Two objects that call {@code acquire()} at the same time never both
   * complete {@code true}.
   *
   * <p>On a {@linkplain #close() closed} lease the future fails with {@link IllegalStateException}.
   *
   * @return whether this holder now holds the lease
   */
  CompletableFuture<Boolean> acquire();

  /**
   * Gives the lease up voluntarily.
   *
   * <p>{@link #checkAlive()} turns {@code false} at once and renewal stops; the future completes
   * once the store confirmed that this tenure ended, so another holder can acquire right away. The
   * removal is conditional on this exact tenure: a late or repeated release can never end a newer
   * tenure, of this holder or of another. If the store cannot confirm before the local safe
   * deadline, the future fails with a {@link LeaseException} and the store lets the tenure expire
   * after the TTL.
   *
   * <p>Without a held lease (never acquired, already released, or after {@link #onLost}) it is a
   * no-op that completes normally. It never fires {@link #onLost}. Called while an
   * {@link #acquire()} is in progress (one that confirms a held tenure included), it waits for that
   * call to answer and then releases what it got.
   *
   * @return completes when the store confirmed the release
   */
  CompletableFuture<Void> release();

  /**
   * Whether this holder still holds the lease, by local knowledge only: no I/O, no lock, about the
   * cost of a volatile read and one read of the monotonic clock.
   *
   * <p>It never returns {@code true} after the local safe deadline has passed, even when the
   * renewal thread was starved or the whole process was paused: it compares the clock with the
   * deadline itself rather than trusting a flag that a renewal would have cleared. Once it returns
   * {@code false} for a tenure it never returns {@code true} for that tenure again.
   *
   * <p><b>What it does not promise.</b> The answer can be out of date by the time the caller acts
   * on it: the lease may be lost a nanosecond later, so work started after a {@code true} may
   * finish after the lease is gone. Use it to gate work, not as proof of ownership; for an
   * irreversible step, confirm with {@link #acquire()} (one round trip while held) and let the
   * protected resource check the {@linkplain #fencingToken() fencing token}.
   *
   * @return {@code true} if this holder holds the lease and its local safe deadline is ahead
   */
  boolean checkAlive();

  /**
   * Time left until the local safe deadline of the current tenure, or {@link Duration#ZERO} when
   * not held. Renewals push the deadline forward; a value that keeps shrinking means renewals are
   * failing and work should wind down.
   *
   * @return the time this holder may still act on the lease without a further renewal
   */
  Duration remaining();

  /**
   * The fencing token of the current tenure, or empty when {@link #checkAlive()} is {@code false}.
   *
   * <p>Each tenure (a successful acquisition after not holding) carries a number strictly greater
   * than the number of every earlier tenure of the same lease name in the same store, whoever held
   * it. A protected resource that remembers the highest token it has accepted, and rejects lower
   * ones, turns away a holder that resumed after a pause longer than the TTL.
   *
   * @return the token of the tenure now held
   */
  OptionalLong fencingToken();

  /**
   * Who held the lease when the store last refused an {@link #acquire()} of this object, as the
   * store names that holder; for messages and logs ("held by worker-7#3f2a…"), never for
   * decisions.
   *
   * <p>It is set each time an {@code acquire()} completes {@code false} and cleared each time one
   * completes {@code true}, so it describes the last definite refusal. It is empty before any
   * refusal, after a successful acquire, and when the store did not say who holds the lease (not
   * every store can). The name is the store's: backends built on the engine of {@code
   * leasehold-spi} record {@link HolderId#toString()}, {@code owner#incarnation}, but a store
   * shared with other software may name holders its own way. By the time the caller reads it the
   * lease may have changed hands again.
   *
   * <p>The default implementation knows no holder and returns empty.
   *
   * @return the holder named by the store in the last refusal, if it named one
   */
  default Optional<String> lastKnownHolder() {
    return Optional.empty();
  }

  /**
   * Registers a handler that is called once per unexpected loss of the lease: the TTL passed
   * without a successful renewal (partition, pause, store unreachable), the store reported that
   * another holder has it, or the store reported that this tenure no longer exists. It is not
   * called for {@link #release()} or {@link #close()}.
   *
   * <p>By the time the handler runs, {@link #checkAlive()} is already {@code false}, and another
   * holder may already be acting: stop owner-only work at once (cancel, interrupt, reject pending
   * requests) and wait for nothing expensive. A new {@link #acquire()} is needed to hold the lease
   * again. Handlers run on the backend's callback thread, never on the renewal path and never under
   * an internal lock, in registration order; a handler that throws is logged and harms neither the
   * other handlers nor the lease. A handler may call {@link #acquire()} to try again at once. A
   * handler that blocks delays the handlers of other leases of the same backend, so never wait in
   * one for another lease's future. A handler registered after a loss is not called for that
   * loss.
   *
   * @param handler called with the reason of each loss
   * @return a subscription whose {@link Subscription#cancel()} removes the handler
   */
  Subscription onLost(Consumer<LeaseLost> handler);

  /**
   * Attaches a key to the current tenure: it lives exactly as long as the tenure. Others read it
   * with {@link LeaseBackend#read(String)}; the store deletes it when the tenure ends (released,
   * expired, revoked), atomically with the tenure where the store can (memory, core). Writing a key
   * again replaces its value.
   *
   * <p>The write is conditional on this very tenure in the store: once the tenure has ended there,
   * it fails and never lands, so a holder that resumes after a pause cannot leave data under a
   * newer holder's tenure. The future completes once the store confirmed the write; it fails with
   * {@link IllegalStateException} when this object does not hold the lease ({@link #checkAlive()}
   * is false) or the store answered that the tenure is gone, and with a {@link LeaseException}
   * when the outcome is unknown (the write may then have landed, and still ends with the tenure).
   *
   * <p>Keys are 1 to 128 characters of {@code A-Z a-z 0-9 . _ -}; values at most 4096 characters.
   * An optional capability, like {@link LeaseBackend#observe}: a backend that cannot attach keys
   * throws {@link UnsupportedOperationException} naming the backend; the default implementation
   * does.
   *
   * @param key the key
   * @param value its value
   * @return completes when the store confirmed the write
   * @throws IllegalArgumentException if the key or value break the rules above (nothing is sent)
   * @throws UnsupportedOperationException if the backend cannot attach keys
   */
  default CompletableFuture<Void> attach(String key, String value) {
    throw new UnsupportedOperationException(
        "attached keys are not supported by the backend of lease '" + name() + "'");
  }

  /**
   * Releases the lease if held, stops all timers and detaches this object from its backend.
   * Waits for the store's confirmation at most one {@linkplain LeaseSettings#operationTimeout()
   * operation timeout}; if none comes, the store lets the tenure expire after the TTL. Idempotent;
   * never throws. Afterwards {@link #acquire()} fails and {@link #release()} is a no-op.
   */
  @Override
  void close();
}
