package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KubernetesLeaseNamesTest {

  @Test
  void validObjectNamesAreUsedAsTheyAre() {
    for (String name : List.of("orders", "orders-eu", "a", "shard.7.compactor", "x".repeat(253))) {
      assertThat(KubernetesLeaseNames.objectName(name)).isEqualTo(name);
    }
  }

  @Test
  void namesKubernetesWouldRejectAreMappedToValidDistinctNames() {
    List<String> names =
        List.of(
            "Orders", "orders_", "ORDERS", "Orders/EU", "orders eu", "-orders", "orders-", "a..b",
            "Ünïcödé", "#", "x".repeat(254), "x".repeat(256), "x".repeat(255) + "y",
            "y" + "x".repeat(255));
    Map<String, String> seen = new HashMap<>();
    for (String name : names) {
      String object = KubernetesLeaseNames.objectName(name);
      assertThat(KubernetesLeaseNames.isValidObjectName(object)).as("object name of %s", name).isTrue();
      assertThat(object).as("object name of %s", name).matches(".*-[0-9a-f]{20}");
      String earlier = seen.put(object, name);
      assertThat(earlier).as("%s and %s map to the same object %s", earlier, name, object).isNull();
      assertThat(KubernetesLeaseNames.objectName(name)).as("the mapping is stable").isEqualTo(object);
    }
    assertThat(KubernetesLeaseNames.objectName("Orders/EU")).startsWith("orders-eu-");
  }

  @Test
  void longNamesThatDifferOnlyAtTheEndDoNotCollide() {
    // akka-management #910: names cut to 63 characters collided.
    String prefix = "A".repeat(250);
    assertThat(KubernetesLeaseNames.objectName(prefix + "1"))
        .isNotEqualTo(KubernetesLeaseNames.objectName(prefix + "2"));
  }

  @Test
  void aValidNameOfTheMappedFormIsMappedAgainSoItCannotMeetAMappedName() {
    String mapped = KubernetesLeaseNames.objectName("Orders");
    assertThat(KubernetesLeaseNames.isValidObjectName(mapped)).isTrue();

    assertThat(KubernetesLeaseNames.objectName(mapped)).isNotEqualTo(mapped);
  }

  @Test
  void namespacesMustBeDns1123Labels() {
    assertThat(KubernetesLeaseNames.checkNamespace("team-a")).isEqualTo("team-a");
    for (String bad : List.of("", "Team", "team_a", "-a", "a-", "a.b", "x".repeat(64))) {
      assertThatThrownBy(() -> KubernetesLeaseNames.checkNamespace(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("namespace must be a DNS-1123 label")
          .hasMessageContaining("'" + bad + "'");
    }
  }
}
