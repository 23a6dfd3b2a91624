package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The counted length is what protobuf and String.getBytes would write, for every kind of char. */
class Utf8Test {

  @Test
  void countsWhatAnEncoderWrites() {
    for (String s : new String[] {"", "a", "é", "€", "😀", "a😀b", "\uD800", "\uDC00x", "\uD800\uD800\uDC00", "z\uDBFF"}) {
      assertThat(Utf8.length(s)).as(s).isEqualTo(s.getBytes(StandardCharsets.UTF_8).length);
    }
  }

  @Test
  void countsRandomStringsOfEveryRangeAsAnEncoderDoes() {
    SplittableRandom random = new SplittableRandom(7);
    char[] kinds = {'a', 'ß', '中', '\uD83D', '\uDE00'};
    for (int round = 0; round < 2_000; round++) {
      StringBuilder s = new StringBuilder();
      int n = random.nextInt(12);
      for (int i = 0; i < n; i++) {
        char kind = kinds[random.nextInt(kinds.length)];
        s.append(kind < 0x80 ? (char) ('a' + random.nextInt(26)) : kind);
      }
      String string = s.toString();
      assertThat(Utf8.length(string)).as(string).isEqualTo(string.getBytes(StandardCharsets.UTF_8).length);
    }
  }
}
