package io.leasehold;

/**
 * The store answered in a way this client does not understand or cannot accept (a malformed
 * reply, a request the store refused as invalid, a record that breaks Leasehold's invariants).
 * Trying again rarely helps: the message says what was wrong, and usually points to a version
 * mismatch or to something else writing Leasehold's records.
 */
public class LeaseProtocolException extends LeaseException {

  private static final long serialVersionUID = 1L;

  /**
   * Makes the exception.
   *
   * @param message what was asked, and what in the answer was wrong
   * @param cause the underlying failure, or {@code null}
   */
  public LeaseProtocolException(String message, Throwable cause) {
    super(Code.PROTOCOL, message, cause);
  }
}
