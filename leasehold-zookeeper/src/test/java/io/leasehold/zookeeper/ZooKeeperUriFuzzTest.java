package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz test of the {@code zookeeper://} URI parser (docs/testing.md, "Fuzzing"): any string is
 * either a usable URI (servers, a chroot that is empty or absolute, a session timeout in range, a
 * canonical form that parses to the same) or refused with an {@link IllegalArgumentException} that
 * says why; nothing else. Input: the URI's bytes, as UTF-8.
 */
@Timeout(60)
class ZooKeeperUriFuzzTest {

  @FuzzTest
  void anyStringIsAZooKeeperUriOrRefusedWithAMessage(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    ZooKeeperUri uri;
    try {
      uri = ZooKeeperUri.parse(text);
    } catch (IllegalArgumentException e) {
      assertThat(e.getMessage()).as("refusal of '%s'", text).isNotBlank();
      return;
    }
    assertThat(uri.servers()).as("servers of '%s'", text).isNotBlank();
    assertThat(uri.chroot()).as("chroot of '%s'", text).matches(c -> c.isEmpty() || (c.startsWith("/") && !c.endsWith("/")), "empty or absolute");
    assertThat(uri.sessionTimeout())
        .as("session timeout of '%s'", text)
        .isBetween(ZooKeeperUri.MIN_SESSION_TIMEOUT, ZooKeeperUri.MAX_SESSION_TIMEOUT);
    assertThat(ZooKeeperUri.parse(uri.toString())).as("'%s' parsed again from its canonical form", text).isEqualTo(uri);
  }
}
