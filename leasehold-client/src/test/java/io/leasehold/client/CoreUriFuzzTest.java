package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Timeout;
import java.util.List;

/**
 * Fuzz test of the {@code leasehold://} URI parser (docs/testing.md, "Fuzzing"): any string is
 * either a usable node list or refused with an {@link IllegalArgumentException} that says why;
 * nothing else. Input: the URI's bytes, as UTF-8.
 */
@Timeout(60)
class CoreUriFuzzTest {

  @FuzzTest
  void anyStringIsANodeListOrRefusedWithAMessage(byte[] input) {
    String uri = new String(input, StandardCharsets.UTF_8);
    List<InetSocketAddress> endpoints;
    try {
      endpoints = CoreBackendProvider.endpoints(uri);
    } catch (IllegalArgumentException e) {
      assertThat(e.getMessage()).as("refusal of '%s'", uri).isNotBlank();
      return;
    }
    assertThat(endpoints).as("nodes of '%s'", uri).isNotEmpty();
    for (InetSocketAddress a : endpoints) {
      assertThat(a.getHostString()).as("a host of '%s'", uri).isNotBlank()
          .matches("[A-Za-z0-9._:\\[\\]%-]+"); // a DNS name or an IP literal: nothing else reaches gRPC
      assertThat(a.getPort()).as("a port of '%s'", uri).isBetween(1, 65535);
    }
  }
}
