package io.leasehold.pekko;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A lease block is read the way Pekko's {@code LeaseProvider} hands it over: the block, falling
 * back to {@code pekko.coordination.lease}. Every bad value is refused with a message that names
 * the key.
 */
@Tag("integration")
class PekkoLeaseConfigTest {

  private static org.apache.pekko.coordination.lease.LeaseSettings pekko(String block) {
    Config all = ConfigFactory.parseString("my-lease {" + block + "}").withFallback(ConfigFactory.load());
    Config leaseConfig =
        all.getConfig("my-lease").withFallback(all.getConfig("leasehold.pekko.lease"))
            .withFallback(all.getConfig("pekko.coordination.lease"));
    return org.apache.pekko.coordination.lease.LeaseSettings.apply(leaseConfig, "jobs", "node-a:2552");
  }

  @Test
  void theReferenceBlockIsLeaseholdsDefaultsWithAFifteenSecondTtl() {
    PekkoLeaseConfig c = PekkoLeaseConfig.from(pekko("backend = \"etcd://127.0.0.1:2379\""));
    assertThat(c.backendUri()).isEqualTo("etcd://127.0.0.1:2379");
    assertThat(c.settings())
        .isEqualTo(
            LeaseSettings.builder("jobs", "node-a:2552")
                .ttl(Duration.ofSeconds(15))
                .heartbeatInterval(Duration.ofSeconds(5))
                .operationTimeout(Duration.ofMillis(2500))
                .build());
  }

  @Test
  void aBlockWithoutTheLeaseholdDefaultsTakesPekkosTimings() {
    Config all =
        ConfigFactory.parseString(
                "bare { lease-class = \"io.leasehold.pekko.LeaseholdLease\", backend = \"memory:\" }")
            .withFallback(ConfigFactory.load());
    Config leaseConfig = all.getConfig("bare").withFallback(all.getConfig("pekko.coordination.lease"));
    PekkoLeaseConfig c =
        PekkoLeaseConfig.from(
            org.apache.pekko.coordination.lease.LeaseSettings.apply(leaseConfig, "jobs", "n"));
    assertThat(c.settings().ttl()).isEqualTo(Duration.ofSeconds(120));
    assertThat(c.settings().heartbeatInterval()).isEqualTo(Duration.ofSeconds(12));
    assertThat(c.settings().operationTimeout()).isEqualTo(Duration.ofSeconds(5));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          backend = ""                                    | 'backend' is required
          acquire-retries = 500                           | 'acquire-retries' = 500 is out of range: acquireRetries must be between 0 and 100
          acquire-retries = many                          | 'acquire-retries' = "many" is not a number
          retry-interval = fast                           | 'retry-interval' = "fast" is not a duration
          retry-interval = 0s                             | 'retry-interval' = "0s" is out of range
          max-clock-drift = 0.7                           | 'max-clock-drift' = 0.7 is out of range
          safety-margin = 20s                             | 'safety-margin' does not fit with the other timings
          lease-operation-timeout = 2h                    | 'lease-operation-timeout' = "2h" is out of range
          heartbeat-timeout = 48h, heartbeat-interval = 1h | 'heartbeat-timeout' = "48h" is out of range
          safety-margin = 14s, heartbeat-interval = 6s    | 'heartbeat-interval' does not fit with the other timings
          """)
  void aBadValueIsRefusedNamingTheKey(String block, String message) {
    String full = block.contains("backend") ? block : "backend = \"memory:\", " + block;
    assertThatThrownBy(() -> PekkoLeaseConfig.from(pekko(full)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("Leasehold lease 'jobs'")
        .hasMessageContaining(message);
  }

  @Test
  void theMessageSaysWhereTheValueWasSet() {
    assertThatThrownBy(() -> PekkoLeaseConfig.from(pekko("backend = \"memory:\", acquire-retries = -1")))
        .hasMessageContaining("String: 1");
  }
}
