package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A {@code user:password@} part in an etcd URI is refused, and neither the refusal nor the
 * builder's {@code toString()} shows the password (the user stays, to say whose it was).
 */
class EtcdUriRedactionTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "etcd://alice:hunter2@127.0.0.1:2379",
      "etcd://alice:hunter2@127.0.0.1",
      "etcd://127.0.0.1:2379,alice:hunter2@10.0.0.2:2379",
      "etcds://alice:hun/ter2@127.0.0.1:2379?ca=ca.pem",
      "etcd://alice:hun?ter2@127.0.0.1:2379",
      "etcd://alice:hunter2@127.0.0.1:2379?user=alice&password=hunter2"})
  void aPasswordInTheAuthorityIsRefusedWithoutBeingShown(String uri) {
    assertThatThrownBy(() -> EtcdUri.parse(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("etcd backend URI must look like")
        .hasMessageContaining("user:password@host) is not accepted")
        .hasMessageContaining(":***@")
        .hasMessageNotContaining("hunter2")
        .hasMessageNotContaining("ter2");
    assertThatThrownBy(() -> LeaseBackend.open(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("hunter2")
        .hasMessageNotContaining("ter2");
    assertThat(EtcdBackend.builder(uri).toString()).contains(":***@").doesNotContain("ter2");
  }
}
