package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LeaseSettingsTest {

  @Test
  void defaultsFollowTheTtl() {
    LeaseSettings s = LeaseSettings.builder("orders", "node-1").build();

    assertThat(s.name()).isEqualTo("orders");
    assertThat(s.owner()).isEqualTo("node-1");
    assertThat(s.ttl()).isEqualTo(Duration.ofSeconds(15));
    assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(s.acquireRetries()).isEqualTo(2);
    assertThat(s.retryInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.operationTimeout()).isEqualTo(Duration.ofMillis(2500));
    assertThat(s.maxClockDrift()).isEqualTo(0.01);
    assertThat(s.safetyMargin()).isEqualTo(Duration.ofMillis(1500));
    assertThat(s.safeWindow()).isEqualTo(Duration.ofMillis(14_850 - 1_500));
  }

  /**
   * The settings table lives in the README (for users) and in this class's Javadoc (for IDEs):
   * their defaults must not drift apart.
   */
  @Test
  void theReadmeAndTheJavadocStateTheSameDefaults() throws Exception {
    java.nio.file.Path module = java.nio.file.Path.of("").toAbsolutePath();
    String readme = java.nio.file.Files.readString(module.resolveSibling("README.md"));
    String javadoc = java.nio.file.Files.readString(
        module.resolve("src/main/java/io/leasehold/LeaseSettings.java"));

    java.util.Map<String, String> inReadme = new java.util.TreeMap<>();
    java.util.regex.Matcher row = java.util.regex.Pattern
        .compile("(?m)^\\| `(\\w+)` \\| ([^|]+) \\|").matcher(
            readme.substring(readme.indexOf("| setting | default |")));
    while (row.find() && !inReadme.containsKey(row.group(1))) {
      inReadme.put(row.group(1), row.group(2).trim());
    }
    java.util.Map<String, String> inJavadoc = new java.util.TreeMap<>();
    String table = javadoc.substring(javadoc.indexOf("<table>"), javadoc.indexOf("</table>"))
        .replaceAll("\\s*\\n\\s*\\*\\s*", " ");
    java.util.regex.Matcher cell = java.util.regex.Pattern
        .compile("<tr><td>\\{@link #(\\w+)\\(\\) \\w+}</td><td>([^<]+)</td>").matcher(table);
    while (cell.find()) {
      inJavadoc.put(cell.group(1), cell.group(2).trim());
    }

    assertThat(inJavadoc).as("the Javadoc's table").hasSize(9);
    assertThat(inReadme).as("the README's table, against the Javadoc's").isEqualTo(inJavadoc);
  }

  @Test
  void derivedDefaultsScaleDownWithAShortTtl() {
    LeaseSettings s = LeaseSettings.builder("n", "o").ttl(Duration.ofSeconds(1)).build();

    assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofNanos(333_333_333));
    assertThat(s.retryInterval()).isEqualTo(Duration.ofMillis(100));
    assertThat(s.operationTimeout()).isEqualTo(s.heartbeatInterval().dividedBy(2));
    assertThat(s.safetyMargin()).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void theDefaultOperationTimeoutIsCappedAtFiveSeconds() {
    LeaseSettings s = LeaseSettings.builder("n", "o").ttl(Duration.ofMinutes(2)).build();

    assertThat(s.operationTimeout()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void theSafeWindowIsTheTtlLessDriftLessMargin() {
    LeaseSettings s =
        LeaseSettings.builder("n", "o")
            .ttl(Duration.ofSeconds(10))
            .maxClockDrift(0.02)
            .safetyMargin(Duration.ofSeconds(1))
            .build();

    assertThat(s.safeWindow()).isEqualTo(Duration.ofMillis(9_800 - 1_000));
  }

  @Test
  void theSmallestTtlStillBuilds() {
    LeaseSettings s = LeaseSettings.builder("n", "o").ttl(Duration.ofMillis(1)).build();

    assertThat(s.safeWindow()).isPositive();
    assertThat(s.heartbeatInterval()).isLessThan(s.safeWindow());
  }

  static Stream<Arguments> badValues() {
    return Stream.of(
        bad("ttl", "ttl must be between 1 ms and 24 h; was 0 ns", b -> b.ttl(Duration.ZERO)),
        bad("ttl", "ttl must be between 1 ms and 24 h; was -1 s", b -> b.ttl(Duration.ofSeconds(-1))),
        bad("ttl", "ttl must be between 1 ms and 24 h; was 25 h", b -> b.ttl(Duration.ofHours(25))),
        bad(
            "heartbeatInterval",
            "heartbeatInterval must be above 0 and below the safe window",
            b -> b.heartbeatInterval(Duration.ZERO)),
        bad(
            "heartbeatInterval",
            "heartbeatInterval must be above 0 and below the safe window ttl × (1 − maxClockDrift)"
                + " − safetyMargin = 13.35 s; was 14 s",
            b -> b.heartbeatInterval(Duration.ofSeconds(14)).build()),
        bad(
            "acquireRetries",
            "acquireRetries must be between 0 and 100; was -1",
            b -> b.acquireRetries(-1)),
        bad(
            "acquireRetries",
            "acquireRetries must be between 0 and 100; was 101",
            b -> b.acquireRetries(101)),
        bad(
            "retryInterval",
            "retryInterval must be between 1 ms and 1 h; was 999 µs",
            b -> b.retryInterval(Duration.ofNanos(999_000))),
        bad(
            "operationTimeout",
            "operationTimeout must be between 1 ms and 1 h; was 61 min",
            b -> b.operationTimeout(Duration.ofMinutes(61))),
        bad(
            "maxClockDrift",
            "maxClockDrift must be at least 0 and below 0.5; was -0.1",
            b -> b.maxClockDrift(-0.1)),
        bad(
            "maxClockDrift",
            "maxClockDrift must be at least 0 and below 0.5; was NaN",
            b -> b.maxClockDrift(Double.NaN)),
        bad(
            "safetyMargin",
            "safetyMargin must be at least 0",
            b -> b.safetyMargin(Duration.ofMillis(-1))),
        bad(
            "safetyMargin",
            "safetyMargin must be below ttl × (1 − maxClockDrift) = 14.85 s so that the safe window"
                + " is not empty; was 15 s with ttl 15 s and maxClockDrift 0.01",
            b -> b.safetyMargin(Duration.ofSeconds(15)).build()),
        bad(
            "heartbeatInterval",
            "heartbeatInterval must be above 0 and below the safe window ttl × (1 − maxClockDrift)"
                + " − safetyMargin = 4.85 s; was 5 s (the default, ttl / 3)",
            b -> b.safetyMargin(Duration.ofSeconds(10)).build()));
  }

  private static Arguments bad(String field, String message, Consumer<LeaseSettings.Builder> use) {
    return Arguments.of(field, message, use);
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource("badValues")
  void badValuesAreRejectedWithTheFieldTheRangeAndTheValue(
      String field, String message, Consumer<LeaseSettings.Builder> use) {
    LeaseSettings.Builder builder = LeaseSettings.builder("n", "o");

    assertThatThrownBy(() -> use.accept(builder))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith(field + " must")
        .hasMessageStartingWith(message);
  }

  @Test
  void aRejectedValueLeavesTheBuilderAsItWas() {
    LeaseSettings.Builder builder = LeaseSettings.builder("n", "o").ttl(Duration.ofSeconds(3));

    assertThatThrownBy(() -> builder.ttl(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);

    assertThat(builder.build().ttl()).isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void namesAreCheckedAtTheStart() {
    assertThatThrownBy(() -> LeaseSettings.builder("", "o")).hasMessage("name must not be blank");
    assertThatThrownBy(() -> LeaseSettings.builder("n", "  ")).hasMessage("owner must not be blank");
    assertThatThrownBy(() -> LeaseSettings.builder("n".repeat(257), "o"))
        .hasMessage("name must be at most 256 characters; was 257 characters");
    assertThatThrownBy(() -> LeaseSettings.builder(" n", "o"))
        .hasMessage("name must not start or end with white space; was ' n'");
    assertThatThrownBy(() -> LeaseSettings.builder("n", "a\u0000b"))
        .hasMessage("owner must not contain control characters; found U+0000 at index 1");
    assertThatThrownBy(() -> LeaseSettings.builder(null, "o"))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("name");
    assertThat(LeaseSettings.builder("n".repeat(256), "Ünïcödé owner/with:symbols").build().owner())
        .isEqualTo("Ünïcödé owner/with:symbols");
  }

  @Test
  void settingsAreValuesAndToBuilderRoundTrips() {
    LeaseSettings s =
        LeaseSettings.builder("n", "o")
            .ttl(Duration.ofSeconds(9))
            .heartbeatInterval(Duration.ofSeconds(2))
            .acquireRetries(5)
            .retryInterval(Duration.ofMillis(250))
            .operationTimeout(Duration.ofSeconds(1))
            .maxClockDrift(0.05)
            .safetyMargin(Duration.ofMillis(700))
            .build();

    assertThat(s.toBuilder().build()).isEqualTo(s).hasSameHashCodeAs(s);
    assertThat(s.toBuilder().acquireRetries(6).build()).isNotEqualTo(s);
    assertThat(s.toString()).contains("name='n'", "ttl=PT9S", "safeWindow=");
  }
}
