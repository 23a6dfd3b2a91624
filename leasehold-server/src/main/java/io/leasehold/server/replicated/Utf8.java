package io.leasehold.server.replicated;

/**
 * Byte lengths of strings in UTF-8, counted without encoding them: the replicated state counts
 * what it keeps toward {@code --max-data-bytes}, and the edge holds keys and names to their byte
 * limits, both on hot paths where an encoded copy per string would be garbage.
 */
public final class Utf8 {

  private Utf8() {}

  /**
   * {@return the length of {@code s} in UTF-8, without encoding it (nothing allocated)}
   *
   * @param s the string
   */
  public static int length(String s) {
    int bytes = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        bytes++;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else if (Character.isSurrogate(c)) {
        bytes++; // a lone surrogate: encoded as '?', as String.getBytes and protobuf do
      } else {
        bytes += 3;
      }
    }
    return bytes;
  }
}
