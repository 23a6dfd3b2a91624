package io.leasehold;

/** The rule shared by lease names and owner names; package-private on purpose. */
final class Names {

  /** Longest name accepted by every backend; a backend may accept less and says so. */
  static final int MAX_LENGTH = 256;

  private Names() {}

  static void check(String field, String value) {
    if (value.isEmpty() || value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank");
    }
    if (value.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(
          field + " must be at most " + MAX_LENGTH + " characters; was " + value.length()
              + " characters");
    }
    if (!value.strip().equals(value)) {
      throw new IllegalArgumentException(
          field + " must not start or end with white space; was '" + value + "'");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (Character.isISOControl(c)) {
        throw new IllegalArgumentException(
            field + " must not contain control characters; found U+"
                + String.format("%04X", (int) c) + " at index " + i);
      }
    }
  }
}
