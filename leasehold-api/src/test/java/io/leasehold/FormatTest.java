package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class FormatTest {

  @Test
  void durationsReadAsPeopleWriteThem() {
    assertThat(Format.duration(Duration.ZERO)).isEqualTo("0 ns");
    assertThat(Format.duration(Duration.ofNanos(999_000))).isEqualTo("999 µs");
    assertThat(Format.duration(Duration.ofMillis(500))).isEqualTo("500 ms");
    assertThat(Format.duration(Duration.ofMillis(1500))).isEqualTo("1.5 s");
    assertThat(Format.duration(Duration.ofMillis(13_350))).isEqualTo("13.35 s");
    assertThat(Format.duration(Duration.ofMinutes(61))).isEqualTo("61 min");
    assertThat(Format.duration(Duration.ofHours(24))).isEqualTo("24 h");
    assertThat(Format.duration(Duration.ofSeconds(-1))).isEqualTo("-1 s");
    assertThat(Format.duration(Duration.ofNanos(333_333_333))).isEqualTo("333.333 ms");
    assertThat(Format.duration(Duration.ofDays(300 * 365))).startsWith("PT");
  }
}
