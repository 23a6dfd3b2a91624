package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A {@code user:password@} part in a ZooKeeper URI is refused without the password shown. */
class ZooKeeperUriRedactionTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "zookeeper://alice:hunter2@127.0.0.1:2181",
      "zookeeper://alice:hunter2@127.0.0.1",
      "zookeeper://127.0.0.1:2181,alice:hunter2@10.0.0.2:2181/chroot",
      "zookeeper://alice:hun/ter2@127.0.0.1:2181?sessionTimeout=5s",
      "zookeeper://alice:hunter2@127.0.0.1:2181?sessionTimeout=forever"})
  void aPasswordInTheAuthorityIsRefusedWithoutBeingShown(String uri) {
    assertThatThrownBy(() -> ZooKeeperUri.parse(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("user:password@host) is not accepted")
        .hasMessageContaining(":***@")
        .hasMessageNotContaining("hunter2")
        .hasMessageNotContaining("ter2");
    assertThatThrownBy(() -> LeaseBackend.open(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("hunter2")
        .hasMessageNotContaining("ter2");
  }
}
