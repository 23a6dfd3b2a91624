package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
@Tag("integration")
class ZooKeeperUriTest {

  @Test
  void serversChrootAndSessionTimeoutAreParsed() {
    ZooKeeperUri uri = ZooKeeperUri.parse("zookeeper://zk1:2181,zk2,[::1]:2182/apps/leases/?sessionTimeout=1500ms");
    assertThat(uri.servers()).isEqualTo("zk1:2181,zk2:2181,[::1]:2182");
    assertThat(uri.chroot()).isEqualTo("/apps/leases");
    assertThat(uri.connectString()).isEqualTo("zk1:2181,zk2:2181,[::1]:2182/apps/leases");
    assertThat(uri.sessionTimeout()).isEqualTo(Duration.ofMillis(1500));
  }

  @Test
  void defaultsAreTheStandardPortNoChrootAndFifteenSeconds() {
    ZooKeeperUri uri = ZooKeeperUri.parse("ZooKeeper://localhost");
    assertThat(uri.connectString()).isEqualTo("localhost:2181");
    assertThat(uri.sessionTimeout()).isEqualTo(Duration.ofSeconds(15));
    assertThat(ZooKeeperUri.parse("zookeeper://h:1/?sessionTimeout=PT20S").sessionTimeout())
        .isEqualTo(Duration.ofSeconds(20));
    assertThat(ZooKeeperUri.parse("zookeeper://h:1?sessionTimeout=2m").sessionTimeout())
        .isEqualTo(Duration.ofMinutes(2));
  }

  @Test
  void malformedUrisAreRejectedWithWhatIsWrong() {
    record Case(String uri, String says) {}
    for (Case c : new Case[] {
        new Case("etcd://h:2379", "must start with zookeeper://"),
        new Case("zookeeper:///chroot", "names no server"),
        new Case("zookeeper://h:2181,,h2", "empty entry"),
        new Case("zookeeper://h:0", "port of server 'h:0' must be 1-65535"),
        new Case("zookeeper://h:x", "must be 1-65535"),
        new Case("zookeeper://user@h", "a user or password before the host (user:password@host) is not accepted"),
        new Case("zookeeper://h/a//b", "chroot"),
        new Case("zookeeper://h/a/../b", "chroot"),
        new Case("zookeeper://h?timeout=1s", "unknown parameter 'timeout'"),
        new Case("zookeeper://h?sessionTimeout=10", "sessionTimeout must be a duration from 100ms to 24h"),
        new Case("zookeeper://h?sessionTimeout=50ms", "was '50ms'"),
        new Case("zookeeper://h?sessionTimeout=2d", "sessionTimeout must")}) {
      assertThatThrownBy(() -> ZooKeeperUri.parse(c.uri()))
          .as(c.uri())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c.says());
    }
  }

  @Test
  void securityParametersAreParsedAndKeptInTheCanonicalForm() {
    ZooKeeperUri uri = ZooKeeperUri.parse("zookeeper://h:2281/apps?ca=/etc/zk/ca.pem&cert=c%20d.pem"
        + "&key=k%26ey+1.pem&user=billing&password-file=/run/secrets/zk");
    assertThat(uri.tls()).isTrue();
    assertThat(uri.digest()).isTrue();
    assertThat(uri.ca()).isEqualTo("/etc/zk/ca.pem");
    assertThat(uri.cert()).isEqualTo("c d.pem");
    assertThat(uri.key()).isEqualTo("k&ey+1.pem");
    assertThat(uri.user()).isEqualTo("billing");
    assertThat(uri.passwordFile()).isEqualTo("/run/secrets/zk");
    assertThat(uri.toString()).isEqualTo("zookeeper://h:2281/apps?sessionTimeout=15000ms"
        + "&ca=/etc/zk/ca.pem&cert=c%20d.pem&key=k%26ey+1.pem&user=billing&password-file=/run/secrets/zk");
    assertThat(ZooKeeperUri.parse(uri.toString())).isEqualTo(uri);
    ZooKeeperUri plain = ZooKeeperUri.parse("zookeeper://h");
    assertThat(plain.tls()).isFalse();
    assertThat(plain.digest()).isFalse();
  }

  @Test
  void badSecurityParametersAreRefusedNamingTheParameter() {
    record Case(String uri, String says) {}
    for (Case c : new Case[] {
        new Case("zookeeper://h?cert=c.pem&key=k.pem", "without ca"),
        new Case("zookeeper://h?ca=a.pem&cert=c.pem", "cert is given without key"),
        new Case("zookeeper://h?ca=a.pem&key=k.pem", "key is given without cert"),
        new Case("zookeeper://h?user=u", "user is given without password-file"),
        new Case("zookeeper://h?password-file=p", "password-file is given without user"),
        new Case("zookeeper://h?user=a:b&password-file=p", "user must be a non-empty name without ':'"),
        new Case("zookeeper://h?ca=a.pem&ca=b.pem", "parameter ca is given twice"),
        new Case("zookeeper://h?ca=", "parameter ca has no value"),
        new Case("zookeeper://h?ca=%zz", "parameter ca has a '%' not followed by two hex digits"),
        new Case("zookeeper://h?ca=%ff", "parameter ca has %-escapes that are not UTF-8")}) {
      assertThatThrownBy(() -> ZooKeeperUri.parse(c.uri()))
          .as(c.uri())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(c.says());
    }
  }

  @Test
  void aPasswordInTheUriIsRefusedAndNeverRepeated() {
    assertThatThrownBy(() -> ZooKeeperUri.parse("zookeeper://h?user=u&password=hunter2&ca=a.pem"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a password must not be written in the URI")
        .hasMessageContaining("password-file=FILE")
        .hasMessageContaining("password=***")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(() -> ZooKeeperUri.parse("zookeeper://h?PASSWORD=hunter2&sessionTimeout=1"))
        .hasMessageNotContaining("hunter2");
  }
}
