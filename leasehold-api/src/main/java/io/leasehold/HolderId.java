package io.leasehold;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;

/**
 * Who holds a lease: an owner name chosen by the application, plus an incarnation id chosen at
 * random when a {@link Lease} object is made.
 *
 * <p>The incarnation makes a restarted process (or a second {@code Lease} object in the same
 * process) a new holder even when it uses the same owner name, so it can never renew or release
 * the tenure of the holder it replaces. Stores compare holders by both parts.
 *
 * @param owner the application's name for the holder, for example a host or pod name
 * @param incarnation random id of one {@code Lease} object: 16 lower-case hex digits
 */
public record HolderId(String owner, String incarnation) {

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final HexFormat HEX = HexFormat.of();

  /**
   * Validates both parts; the owner follows the same rule as {@link LeaseSettings#owner()}.
   *
   * @param owner the application's name for the holder
   * @param incarnation 16 lower-case hex digits
   */
  public HolderId {
    Objects.requireNonNull(owner, "owner");
    Objects.requireNonNull(incarnation, "incarnation");
    Names.check("owner", owner);
    if (!isIncarnation(incarnation)) {
      throw new IllegalArgumentException(
          "incarnation must be 16 lower-case hex digits; was '" + incarnation + "'");
    }
  }

  /**
   * A holder id for {@code owner} with a fresh random incarnation.
   *
   * @param owner the owner name
   * @return a holder id that no earlier call returned (64 random bits)
   */
  public static HolderId newIncarnation(String owner) {
    byte[] bytes = new byte[8];
    RANDOM.nextBytes(bytes);
    return new HolderId(owner, HEX.formatHex(bytes));
  }

  /**
   * Parses the form {@link #toString()} writes: {@code owner#incarnation}.
   *
   * @param text an owner name, {@code #}, and 16 hex digits
   * @return the holder id
   * @throws IllegalArgumentException if {@code text} is not of that form
   */
  public static HolderId parse(String text) {
    Objects.requireNonNull(text, "text");
    int hash = text.lastIndexOf('#');
    if (hash <= 0) {
      throw new IllegalArgumentException(
          "holder id must look like owner#0123456789abcdef; was '" + text + "'");
    }
    return new HolderId(text.substring(0, hash), text.substring(hash + 1));
  }

  private static boolean isIncarnation(String s) {
    if (s.length() != 16) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  /** The form stores record and logs show: {@code owner#incarnation}. */
  @Override
  public String toString() {
    return owner + '#' + incarnation;
  }
}
