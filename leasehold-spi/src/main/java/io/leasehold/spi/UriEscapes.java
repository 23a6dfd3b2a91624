package io.leasehold.spi;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The {@code %XX} escapes of backend URI parameter values (file names that may hold {@code &},
 * {@code ?}, {@code #}, {@code %} or spaces), one implementation for every backend's parser. A
 * {@code +} stays a {@code +}: these are paths, not form fields.
 */
public final class UriEscapes {

  private static final String HEX = "0123456789ABCDEF";

  private UriEscapes() {}

  /**
   * Undoes {@code %XX} escapes (UTF-8).
   *
   * @param value a parameter's value as written
   * @return the value with its escapes undone
   * @throws IllegalArgumentException saying what is wrong, to follow "parameter NAME ": "has a '%'
   *     not followed by two hex digits" or "has %-escapes that are not UTF-8"
   */
  public static String decode(String value) {
    if (value.indexOf('%') < 0) {
      return value;
    }
    StringBuilder out = new StringBuilder(value.length());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    int i = 0;
    while (i < value.length()) {
      if (value.charAt(i) != '%') {
        out.append(value.charAt(i++));
        continue;
      }
      bytes.reset(); // a run of escapes is one UTF-8 sequence or more
      while (i < value.length() && value.charAt(i) == '%') {
        int hi = i + 2 < value.length() ? Character.digit(value.charAt(i + 1), 16) : -1;
        int lo = i + 2 < value.length() ? Character.digit(value.charAt(i + 2), 16) : -1;
        if (hi < 0 || lo < 0) {
          throw new IllegalArgumentException("has a '%' not followed by two hex digits (write '%25' for a '%')");
        }
        bytes.write(hi * 16 + lo);
        i += 3;
      }
      try {
        out.append(StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes.toByteArray())));
      } catch (CharacterCodingException e) {
        throw new IllegalArgumentException("has %-escapes that are not UTF-8");
      }
    }
    return out.toString();
  }

  /**
   * The inverse of {@link #decode} for the characters a parser would misread: {@code %}, {@code &},
   * {@code ?}, {@code #}, space and control characters.
   *
   * @param value a parameter's value
   * @return the value, safe to write after {@code NAME=}
   */
  public static String encode(String value) {
    StringBuilder b = new StringBuilder(value.length());
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '%' || c == '&' || c == '?' || c == '#' || c == ' ' || c < 0x20 || c == 0x7f) {
        // Upper-case hex digits, as RFC 3986 recommends.
        b.append('%').append(HEX.charAt(c >> 4)).append(HEX.charAt(c & 15));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
