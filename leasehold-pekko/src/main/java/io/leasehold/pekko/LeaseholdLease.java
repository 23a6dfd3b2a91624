package io.leasehold.pekko;

import io.leasehold.Lease;
import io.leasehold.LeaseLost;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.coordination.lease.LeaseException;
import org.apache.pekko.coordination.lease.LeaseSettings;
import org.apache.pekko.coordination.lease.LeaseTimeoutException;
import scala.Function1;
import scala.Option;
import scala.Some;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;
import scala.runtime.BoxedUnit;

/**
 * A Pekko coordination lease backed by a Leasehold {@link Lease}: set {@code lease-class =
 * "io.leasehold.pekko.LeaseholdLease"} (or use the {@code leasehold.pekko.lease} block) and a
 * {@code backend} URI, and Pekko's {@code LeaseProvider} makes one of these for each lease name
 * and owner. Java code that goes through Pekko's {@code javadsl.LeaseProvider} gets it wrapped in
 * Pekko's adapter, which behaves the same.
 *
 * <ul>
 *   <li>{@link #acquire()} is Leasehold's {@link Lease#acquire()}: {@code true} once the store
 *       confirmed this holder, {@code false} when another holder definitely has it, failed with a
 *       Pekko {@link LeaseException} ({@link LeaseTimeoutException} for a timeout) when the
 *       outcome is unknown.</li>
 *   <li>{@link #acquire(Function1)} also sets the lease-lost callback: it is called from
 *       Leasehold's {@link Lease#onLost}, once per loss, with a {@link LeaseLostException},
 *       after {@link #checkLease()} has turned false and before the store can give the lease to
 *       anyone else. It stays set until another {@code acquire(callback)} replaces it; {@code
 *       acquire()} keeps it.</li>
 *   <li>{@link #release()} completes {@code true} once the store confirmed the release (also when
 *       nothing was held), and fails when the store could not confirm it.</li>
 *   <li>{@link #checkLease()} is Leasehold's {@link Lease#checkAlive()}: no I/O, and never
 *       {@code true} after the local safe deadline, even when the renewal thread is starved or
 *       the process was paused. Stricter than Pekko asks, on purpose.</li>
 * </ul>
 *
 * <p>The holder is the Pekko owner name (a cluster node's {@code host:port}) plus an incarnation
 * id of this object: a node restarted on the same address is a new holder and waits for the old
 * tenure to be released or to expire.
 */
public final class LeaseholdLease extends org.apache.pekko.coordination.lease.scaladsl.Lease {

  private final Lease lease;
  private final AtomicReference<Function1<Option<Throwable>, BoxedUnit>> lostCallback =
      new AtomicReference<>();
  // The token of the tenure the last successful acquire got, for the loss report (a lost
  // tenure's token is no longer readable from the lease).
  private volatile long tenureToken = -1;

  /**
   * Called by Pekko's {@code LeaseProvider}.
   *
   * @param settings the lease name, owner name and configuration block
   * @param system the actor system whose Leasehold backend the lease runs on
   * @throws IllegalArgumentException if the block is not a valid Leasehold lease configuration;
   *     the message names the key
   */
  public LeaseholdLease(LeaseSettings settings, ExtendedActorSystem system) {
    super(settings);
    PekkoLeaseConfig config = PekkoLeaseConfig.from(settings);
    LeaseholdPekko ext = LeaseholdPekko.get(system);
    try {
      this.lease = ext.newLease(config);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "Leasehold lease '" + settings.leaseName() + "': " + e.getMessage(), e);
    }
    lease.onLost(this::lost);
    ext.register(this);
  }

  @Override
  public Future<Object> acquire() {
    CompletableFuture<Object> out = new CompletableFuture<>();
    lease.acquire()
        .whenComplete(
            (held, error) -> {
              if (error != null) {
                out.completeExceptionally(toPekko(error));
                return;
              }
              if (held) {
                tenureToken = lease.fencingToken().orElse(-1);
              }
              out.complete(held);
            });
    return FutureConverters.asScala(out);
  }

  @Override
  public Future<Object> acquire(Function1<Option<Throwable>, BoxedUnit> leaseLostCallback) {
    lostCallback.set(leaseLostCallback);
    return acquire();
  }

  @Override
  public Future<Object> release() {
    CompletableFuture<Object> out = new CompletableFuture<>();
    lease.release()
        .whenComplete(
            (done, error) -> {
              if (error != null) {
                out.completeExceptionally(toPekko(error));
              } else {
                out.complete(Boolean.TRUE);
              }
            });
    return FutureConverters.asScala(out);
  }

  @Override
  public boolean checkLease() {
    return lease.checkAlive();
  }

  /**
   * The fencing token of the tenure held now, or empty when {@link #checkLease()} is false. It is
   * greater than the token of every earlier tenure of this lease name, on any node: pass it to the
   * resource the singleton or shard writes to, so that it can reject a holder that woke up late.
   *
   * @return the token of the current tenure
   */
  public OptionalLong fencingToken() {
    return lease.fencingToken();
  }

  /** {@return the time left until the local safe deadline; zero when not held} */
  public Duration remaining() {
    return lease.remaining();
  }

  /** {@return the Leasehold lease behind this Pekko lease} */
  public Lease leaseholdLease() {
    return lease;
  }

  /** Leasehold's onLost handler (the lease engine already logged the loss). */
  private void lost(LeaseLost reason) {
    LeaseLostException e = new LeaseLostException(lease.name(), tenureToken, reason);
    Function1<Option<Throwable>, BoxedUnit> callback = lostCallback.get();
    if (callback != null) {
      callback.apply(new Some<>(e));
    }
  }

  /** Leasehold's exceptions as Pekko's, with the original as cause. */
  private static Throwable toPekko(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    LeaseException pekko;
    if (e instanceof io.leasehold.LeaseTimeoutException) {
      pekko = new LeaseTimeoutException(e.getMessage());
    } else if (e instanceof io.leasehold.LeaseException) {
      pekko = new LeaseException(e.getMessage());
    } else {
      return e;
    }
    pekko.initCause(e);
    return pekko;
  }

  @Override
  public String toString() {
    return "LeaseholdLease{" + lease.name() + ", " + lease.holder() + '}';
  }
}
