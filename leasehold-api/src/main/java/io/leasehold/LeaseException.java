package io.leasehold;

import java.util.Objects;

/**
 * A lease operation whose outcome is unknown: the store could not be reached, or did not answer
 * in time. Contrast with {@link Lease#acquire()} completing {@code false}, which means another
 * holder definitely holds the lease.
 *
 * <p>Operations fail with one of the subclasses, with the underlying failure attached as the
 * {@linkplain #getCause() cause} where there is one. Code that only needs to know "try again later"
 * catches {@code LeaseException}; code that reports failures can switch on {@link #code()}.
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
  public LeaseException(Code code, String message, Throwable cause) {
    super(message, cause);
    this.code = Objects.requireNonNull(code, "code");
  }

  /** {@return the category of this failure} */
  public Code code() {
    return code;
  }
}
