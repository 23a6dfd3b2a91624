package io.leasehold.spi;

import java.util.concurrent.CompletableFuture;

/**
 * The three operations a backend implements on lease records in its store, for
 * {@link ManagedLease} to build the whole {@link io.leasehold.Lease} contract on.
 *
 * <p>Every method returns at once and completes its future later, from any thread; it must never
 * block the caller. A failure to reach the store completes the future exceptionally, preferably
 * with a {@link io.leasehold.LeaseException}; the engine adds timeouts itself. Definite answers
 * ("someone else holds it", "your tenure is gone") are values, never exceptions.
 */
public interface LeaseStore {

  /**
   * Atomically takes the lease record {@code request.leaseName()} for {@code request.holder()},
   * attached to a time-to-live of {@code request.ttl()} measured by the store from when it
   * receives the request. The store must decide, in one atomic step:
   *
   * <ul>
   *   <li>no record, or an expired one: make a new tenure whose token is greater than the token
   *       of every earlier tenure of this name, and answer {@link AcquireResult.Acquired};</li>
   *   <li>a record of the same holder with the same {@code requestId}: this is a retry of a request
   *       whose reply was lost; renew it and answer {@code Acquired} with its existing token;</li>
   *   <li>a record of the same holder with a smaller {@code requestId}: a tenure this holder
   *       already gave up on; replace it with a new tenure and a greater token;</li>
   *   <li>a record of the same holder with a greater {@code requestId}: this request is a late
   *       copy of an older one; answer {@link AcquireResult.HeldElsewhere} and change
   *       nothing;</li>
   *   <li>a record of another holder: answer {@link AcquireResult.HeldElsewhere}.</li>
   * </ul>
   *
   * <p>A backend should give up on the request once its {@linkplain AcquireRequest#timeout()
   * timeout} has passed rather than retry it further, and must not keep a record alive on its own
   * account: a record the holder never learned of (its answer was lost) must end by itself within
   * one TTL (see {@link #abandon}), so that nobody keeps a name that no holder believes it has.
   *
   * @param request what to acquire, for whom, and when the request was sent
   * @return the store's answer
   */
  CompletableFuture<AcquireResult> acquire(AcquireRequest request);

  /**
   * Extends {@code tenure} by its TTL, measured by the store from when it receives the request,
   * if and only if the store still holds exactly that tenure (same holder and token). Otherwise it
   * answers {@link RenewResult.Lost} with the reason (another holder, no record).
   *
   * @param tenure the tenure to renew
   * @param sentAtNanos the holder's {@link io.leasehold.Ticker} reading when it sent the request;
   *     a backend that answers from a renewal sent earlier (one keep-alive shared by many leases)
   *     reports that earlier time in {@link RenewResult.Renewed#validFromNanos()}
   * @return the store's answer
   */
  CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos);

  /**
   * {@link #renew Renews} {@code tenure} for {@code acquire()} while holding, which promises one
   * round trip that confirms the tenure: the answer must reflect the store as of a moment after
   * this call, never an earlier answer cached for many leases (a shared keep-alive, a watch that
   * may be silent). A backend whose {@code renew} already asks the store about this very tenure
   * need not override this.
   *
   * @param tenure the tenure to confirm
   * @param sentAtNanos the holder's ticker reading when it sent the request
   * @return the store's answer, as for {@link #renew}
   */
  default CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    return renew(tenure, sentAtNanos);
  }

  /**
   * Removes the record if and only if it is still exactly {@code tenure}; otherwise does nothing.
   * Completes normally in both cases, once the store has answered. Being conditional on the
   * tenure is what makes a late or repeated release harmless to the next holder.
   *
   * @param tenure the tenure to end
   * @return completes once the store answered
   */
  CompletableFuture<Void> release(Tenure tenure);

  /**
   * The holder gave up on {@code request} for good without learning its outcome (every attempt
   * timed out or failed, or the lease was closed meanwhile), and will never send it again: if the
   * store holds a record made by it — the same lease, holder and request id — end it, as {@link
   * #release} would. Best effort: completes once the store answered, exceptionally if it could not
   * be reached; the holder does not retry.
   *
   * <p>Keying on the request id is what makes this safe: a later acquire of the same holder has a
   * greater request id and replaces such a record in the store (so an abandon never ends it), and
   * another holder's record never matches. A backend that cannot look a record up by request id
   * may rely on expiry instead — that is the default, which does nothing — provided the record
   * then ends within one TTL: nothing of the backend (a shared session, a keep-alive) may keep it
   * alive on behalf of a request whose holder never learned it was granted.
   *
   * @param request the acquire request given up on
   * @return completes once the store answered
   */
  default CompletableFuture<Void> abandon(AcquireRequest request) {
    return CompletableFuture.completedFuture(null);
  }
}
