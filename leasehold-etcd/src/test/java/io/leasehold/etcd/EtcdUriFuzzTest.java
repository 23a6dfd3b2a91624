package io.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz test of the {@code etcd://} URI parser (docs/testing.md, "Fuzzing"): any string is either
 * a usable URI (endpoints with a host and a port, a namespace the backend accepts, a canonical
 * form that parses to the same) or refused with the parser's own {@link IllegalArgumentException},
 * which names the expected form; nothing else. Input: the URI's bytes, as UTF-8.
 */
@Timeout(60)
@Tag("integration")
class EtcdUriFuzzTest {

  @FuzzTest
  void anyStringIsAnEtcdUriOrRefusedWithTheExpectedForm(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    EtcdUri uri;
    try {
      uri = EtcdUri.parse(text);
    } catch (IllegalArgumentException e) {
      assertThat(e.getMessage()).as("refusal of '%s'", text).startsWith("etcd backend URI must look like");
      return;
    }
    assertThat(uri.endpoints()).as("endpoints of '%s'", text).isNotEmpty();
    for (URI endpoint : uri.endpoints()) {
      assertThat(endpoint.getHost()).as("host of endpoint %s of '%s'", endpoint, text).isNotBlank();
      assertThat(endpoint.getPort()).as("port of endpoint %s of '%s'", endpoint, text).isBetween(1, 65535);
    }
    assertThat(uri.namespace()).as("namespace of '%s'", text).startsWith("/");
    assertThat(EtcdUri.parse(uri.canonical())).as("'%s' parsed again from its canonical form", text).isEqualTo(uri);
  }
}
