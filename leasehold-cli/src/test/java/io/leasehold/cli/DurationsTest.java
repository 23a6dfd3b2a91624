package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class DurationsTest {

  @Test
  void readsEveryUnit() {
    assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(Durations.parse("2s")).isEqualTo(Duration.ofSeconds(2));
    assertThat(Durations.parse("1m")).isEqualTo(Duration.ofMinutes(1));
    assertThat(Durations.parse("1h")).isEqualTo(Duration.ofHours(1));
  }

  @Test
  void readsFractionsCombinationsCaseAndWhiteSpace() {
    assertThat(Durations.parse("1.5s")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse("1m30s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(Durations.parse(" 2S ")).isEqualTo(Duration.ofSeconds(2));
    assertThat(Durations.parse("0.5ms")).isEqualTo(Duration.ofNanos(500_000));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "2", "s", "2x", "-1s", "2 s", "1.s", "1e3ms", "PT2S", "2s!"})
  void rejectsWhatIsNotADurationWithAnExample(String text) {
    assertThatThrownBy(() -> Durations.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not a duration")
        .hasMessageContaining("500ms, 2s");
  }

  @Test
  void rejectsWhatIsFinerThanANanosecondOrTooLong() {
    assertThatThrownBy(() -> Durations.parse("0.0000001ms"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("finer than a nanosecond");
    assertThatThrownBy(() -> Durations.parse("99999999999h"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("too long");
  }

  @Test
  void printsDurationsTheWayItReadsThem() {
    assertThat(Durations.format(Duration.ofMillis(200))).isEqualTo("200ms");
    assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1.5s");
    assertThat(Durations.format(Duration.ofSeconds(2))).isEqualTo("2s");
    assertThat(Durations.format(Duration.ofMinutes(1))).isEqualTo("1m");
    assertThat(Durations.format(Duration.ofSeconds(90))).isEqualTo("1m30s");
    assertThat(Durations.format(Duration.ofHours(1))).isEqualTo("1h");
    assertThat(Durations.format(Duration.ofNanos(500_000))).isEqualTo("0.5ms");
    for (String text : new String[] {"200ms", "1.5s", "2s", "1m", "1m30s", "1h"}) {
      assertThat(Durations.format(Durations.parse(text))).isEqualTo(text);
    }
  }
}
