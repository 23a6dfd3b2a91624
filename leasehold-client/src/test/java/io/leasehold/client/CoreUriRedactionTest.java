package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The core takes no password in its URI (clients authenticate with certificates); one written
 * there anyway is refused without being shown.
 */
class CoreUriRedactionTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "leasehold://alice:hunter2@127.0.0.1:7000",
      "leasehold://127.0.0.1:7000,alice:hunter2@127.0.0.1:7002",
      "leaseholds://alice:hun/ter2@127.0.0.1:7000?ca=ca.pem",
      "leasehold://alice:hun?ter2@127.0.0.1:7000"})
  void aPasswordInTheAuthorityIsRefusedWithoutBeingShown(String uri) {
    assertThatThrownBy(() -> CoreBackendProvider.target(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("takes no user or password")
        .hasMessageContaining(":***@")
        .hasMessageNotContaining("hun")
        .hasMessageNotContaining("ter2");
    assertThatThrownBy(() -> LeaseBackend.open(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("hun")
        .hasMessageNotContaining("ter2");
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "leaseholds://127.0.0.1:7000?ca=ca.pem&password=hunter2",
      "leasehold://127.0.0.1:7000?password=hunter2"})
  void aPasswordParameterIsNotShown(String uri) {
    assertThatThrownBy(() -> CoreBackendProvider.target(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("password=***")
        .hasMessageNotContaining("hunter2");
  }
}
