package io.leasehold;

/** The store did not answer within the operation timeout; the operation may or may not have happened. */
public class LeaseTimeoutException extends LeaseException {

  private static final long serialVersionUID = 1L;

  /**
   * Makes the exception.
   *
   * @param message which operation timed out, on which lease, after how long
   * @param cause the underlying failure, or {@code null}
   */
  public LeaseTimeoutException(String message, Throwable cause) {
    super(Code.TIMEOUT, message, cause);
  }
}
