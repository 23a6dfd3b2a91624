package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class UriEscapesTest {

  @Test
  void decodesEscapesAsUtf8AndLeavesPlusAlone() {
    assertThat(UriEscapes.decode("/etc/my%20certs/a%26b+c%25.pem")).isEqualTo("/etc/my certs/a&b+c%.pem");
    assertThat(UriEscapes.decode("%C3%A9t%C3%A9")).isEqualTo("été");
    assertThat(UriEscapes.decode("plain")).isEqualTo("plain");
  }

  @Test
  void encodeIsUndoneByDecode() {
    String awkward = "/tmp/a b&c?d#e%f\tg+h/é";
    assertThat(UriEscapes.encode(awkward)).doesNotContain(" ", "&", "?", "#", "\t");
    assertThat(UriEscapes.decode(UriEscapes.encode(awkward))).isEqualTo(awkward);
  }

  @Test
  void aBadEscapeIsRefusedSayingWhy() {
    assertThatThrownBy(() -> UriEscapes.decode("a%zz")).hasMessage("has a '%' not followed by two hex digits (write '%25' for a '%')");
    assertThatThrownBy(() -> UriEscapes.decode("a%4")).hasMessageContaining("two hex digits");
    assertThatThrownBy(() -> UriEscapes.decode("%ff")).hasMessage("has %-escapes that are not UTF-8");
  }
}
