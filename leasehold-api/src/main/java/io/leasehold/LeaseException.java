package io.leasehold;

import java.util.Objects;

/**
 * A lease operation whose outcome is unknown: the store could not be reached, or did not answer
 * in time. Contrast with {@link Lease#acquire()} completing {@code false}, which means another
 * holder definitely holds the lease.
 *
 * <p>Operations fail with exactly one of the three subclasses, one per {@link Code}: {@link
 * LeaseTimeoutException}, {@link LeaseStoreUnavailableException} and {@link
 * LeaseProtocolException}, with the underlying failure attached as the {@linkplain #getCause()
 * cause} where there is one. The subclass survives every layer (the lease engine and the
 * recipes rethrow a backend's failure as the same subclass), so code can catch the kind it
 * handles; code that only needs to know "try again later" catches {@code LeaseException}; code
 * that reports failures can switch on {@link #code()}. The constructor is protected: there is no
 * plain {@code LeaseException}; {@link #of} makes the subclass of a code.
 */
public class LeaseException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** The category of a failure. */
  public enum Code {
    /** The store did not answer within the operation timeout. */
    TIMEOUT,
    /** The store could not be reached or refused the request for now. */
    UNAVAILABLE,
    /** The store answered in a way this client does not understand. */
    PROTOCOL
  }

  /** The category of the failure. */
  private final Code code;

  /**
   * Makes an exception of a given code.
   *
   * @param code the category
   * @param message what was attempted and what happened
   * @param cause the underlying failure, or {@code null}
   */
  protected LeaseException(Code code, String message, Throwable cause) {
    super(message, cause);
    this.code = Objects.requireNonNull(code, "code");
  }

  /**
   * Makes the subclass that stands for {@code code}: for a layer that passes on a failure with
   * more context, keeping its kind.
   *
   * @param code the category
   * @param message what was attempted and what happened
   * @param cause the underlying failure, or {@code null}
   * @return a {@link LeaseTimeoutException}, {@link LeaseStoreUnavailableException} or {@link
   *     LeaseProtocolException}
   */
  public static LeaseException of(Code code, String message, Throwable cause) {
    return switch (Objects.requireNonNull(code, "code")) {
      case TIMEOUT -> new LeaseTimeoutException(message, cause);
      case UNAVAILABLE -> new LeaseStoreUnavailableException(message, cause);
      case PROTOCOL -> new LeaseProtocolException(message, cause);
    };
  }

  /** {@return the category of this failure} */
  public Code code() {
    return code;
  }
}
