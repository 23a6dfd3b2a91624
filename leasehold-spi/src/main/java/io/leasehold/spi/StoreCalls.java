package io.leasehold.spi;

import io.leasehold.LeaseException;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.Scheduler;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease engine's plumbing for calls into a {@link LeaseStore}: each call gets a timeout on the
 * runtime's clock (virtual in tests), an answer that comes too late can still be handled, a
 * backend that throws instead of failing its future is contained, and every failure reaches the
 * caller as the {@link LeaseException} subclass of its kind, with what was attempted in front.
 */
final class StoreCalls {

  /** The engine's logger: operators configure one category for everything a lease logs. */
  private static final Logger log = LoggerFactory.getLogger(ManagedLease.class);

  private final Scheduler timers;
  private final String leaseName;
  private final long defaultTimeoutNanos;

  StoreCalls(Scheduler timers, String leaseName, long defaultTimeoutNanos) {
    this.timers = timers;
    this.leaseName = leaseName;
    this.defaultTimeoutNanos = defaultTimeoutNanos;
  }

  <T> CompletableFuture<T> withTimeout(Supplier<CompletableFuture<T>> call, String what) {
    return withTimeout(call, defaultTimeoutNanos, what, null);
  }

  <T> CompletableFuture<T> withTimeout(
      Supplier<CompletableFuture<T>> call, long timeout, String what) {
    return withTimeout(call, timeout, what, null);
  }

  /**
   * Runs a store call with a timeout on the runtime's clock (virtual in tests). An answer that
   * comes after the timeout is handed to {@code late}, if given, instead of being dropped.
   */
  <T> CompletableFuture<T> withTimeout(
      Supplier<CompletableFuture<T>> call,
      long timeout,
      String what,
      BiConsumer<T, Throwable> late) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Scheduler.Cancellable timer =
        timers.schedule(
            () ->
                result.completeExceptionally(
                    new LeaseTimeoutException(
                        "the store did not answer the " + what + " within " + millis(timeout),
                        null)),
            timeout);
    CompletableFuture<T> pending;
    try {
      pending = Objects.requireNonNull(call.get(), "the backend returned no future");
    } catch (VirtualMachineError fatal) {
      throw fatal;
    } catch (Throwable backendBug) {
      pending = CompletableFuture.failedFuture(backendBug);
    }
    pending.whenComplete(
        (value, error) -> {
          timer.cancel();
          boolean inTime =
              error != null ? result.completeExceptionally(unwrap(error)) : result.complete(value);
          if (!inTime && late != null) {
            try {
              late.accept(value, error);
            } catch (RuntimeException | Error e) {
              log.error("Handling a late store answer for lease '{}' failed", leaseName, e);
            }
          }
        });
    return result;
  }

  /**
   * Runs a reply handler so that nothing it throws is lost in the future chain: a failure answers
   * {@code result} instead of leaving it pending.
   */
  <T> BiConsumer<T, Throwable> guarded(
      CompletableFuture<?> result, BiConsumer<T, Throwable> handler) {
    return (value, error) -> {
      try {
        handler.accept(value, error);
      } catch (RuntimeException | Error e) {
        log.error("Handling a store reply for lease '{}' failed", leaseName, e);
        result.completeExceptionally(e);
      }
    };
  }

  static LeaseException noAnswer(String what) {
    return new LeaseProtocolException("the backend answered the " + what + " with nothing", null);
  }

  static LeaseException leaseException(Throwable error, String context) {
    Throwable cause = unwrap(error);
    if (cause instanceof LeaseTimeoutException) {
      return new LeaseTimeoutException(context + ": " + cause.getMessage(), cause);
    }
    if (cause instanceof LeaseException le) {
      return LeaseException.of(le.code(), context + ": " + cause.getMessage(), cause);
    }
    return new LeaseStoreUnavailableException(context + ": " + cause, cause);
  }

  static Throwable unwrap(Throwable error) {
    return Failures.unwrap(error);
  }

  static String millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
  }
}
