package io.leasehold;

/** The store could not be reached or refused the request for now; trying again later may succeed. */
public class LeaseStoreUnavailableException extends LeaseException {

  private static final long serialVersionUID = 1L;

  /**
   * Makes the exception.
   *
   * @param message which operation failed, on which lease, against which store
   * @param cause the underlying failure, or {@code null}
   */
  public LeaseStoreUnavailableException(String message, Throwable cause) {
    super(Code.UNAVAILABLE, message, cause);
  }
}
