package io.leasehold;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A password written into a backend URI never reaches a message. */
class BackendUrisTest {

  @Test
  void theRegistryNamesAUriWithoutASchemeWithoutItsPassword() {
    assertThatThrownBy(() -> LeaseBackend.open("etcd//alice:hunter2@db.example:2379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("backend URI must start with a scheme")
        .hasMessageContaining("alice:***@db.example:2379")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(() -> LeaseBackend.open(" zookeeper://h:2181?user=u&password=hunter2"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("password=***")
        .hasMessageNotContaining("hunter2");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "etcd://alice:hunter2@h:2379                | etcd://alice:***@h:2379",
        "etcd://alice@h:2379                        | etcd://alice@h:2379",
        "etcd://h:2379?user=a@example.com           | etcd://h:2379?user=a@example.com",
        "postgresql://u:hun/ter2@h/db               | postgresql://u:***@h/db",
        "etcd://u:hun?ter2@h:1?namespace=/x         | etcd://u:***@h:1?namespace=/x",
        "etcd://u:hun#ter2@h:1                      | etcd://u:***@h:1",
        "etcd://u:hun@ter2@h:1                      | etcd://u:***@h:1",
        "zookeeper://a@h1:1,u:hunter2@h2:2          | zookeeper://a@h1:***@h2:2",
        "alice:hunter2@h:2379                       | alice:***@h:2379",
        "etcd://h:1?user=a&password=hunter2&x=1     | etcd://h:1?user=a&password=***&x=1",
        "etcd://h:1?PASSWORD=hunter2#f              | etcd://h:1?PASSWORD=***#f",
        "etcd://h:1?user=a&password-file=/run/pw    | etcd://h:1?user=a&password-file=/run/pw",
        "memory:                                    | memory:",
      })
  void passwordsAreHiddenAndTheRestIsKept(String uri, String shown) {
    assertThat(BackendUris.redacted(uri)).isEqualTo(shown).doesNotContain("hunter2");
  }

  @Test
  void nullIsShownAsNull() {
    assertThat(BackendUris.redacted(null)).isEqualTo("null");
  }
}
