package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The kubernetes backend takes no address; one with a password is refused without showing it. */
class KubernetesUriRedactionTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "kubernetes://alice:hunter2@api.example:6443",
      "kubernetes:alice:hunter2@api.example:6443?namespace=a",
      "kubernetes:?namespace=a&password=hunter2",
      "kubrenetes://alice:hunter2@api.example:6443"})
  void aPasswordInTheUriIsNotShown(String uri) {
    assertThatThrownBy(() -> KubernetesBackendProvider.namespaceOf(uri))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("***")
        .hasMessageNotContaining("hunter2");
  }
}
