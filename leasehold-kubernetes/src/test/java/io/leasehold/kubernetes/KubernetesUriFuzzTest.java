package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz test of the {@code kubernetes:} URI parser (docs/testing.md, "Fuzzing"): any string is
 * either a URI naming no namespace or a valid one (a DNS-1123 label), or refused with an {@link
 * IllegalArgumentException} that says why; nothing else. Input: the URI's bytes, as UTF-8.
 */
@Timeout(60)
class KubernetesUriFuzzTest {

  @FuzzTest
  void anyStringIsAKubernetesUriOrRefusedWithAMessage(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    String namespace;
    try {
      namespace = KubernetesBackendProvider.namespaceOf(text);
    } catch (IllegalArgumentException e) {
      assertThat(e.getMessage()).as("refusal of '%s'", text).isNotBlank();
      return;
    }
    if (namespace != null) {
      assertThat(namespace).as("namespace of '%s'", text).matches("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
    }
  }
}
