package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseException;
import io.leasehold.server.Certificates;
import io.leasehold.testkit.SuiteSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.server.auth.ProviderRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS against a real server with a secure client port that requires client certificates (Netty,
 * PEM files; certificates made here, none committed).
 *
 * <p>An embedded ZooKeeper server reads its TLS settings from JVM system properties (its config's
 * {@code ssl.*} keys become {@code zookeeper.ssl.*}); this class puts them back when it is done, so
 * the module's other tests, in the same JVM, see none of them.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ZooKeeperTlsTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  /**
   * Longer than the TTL: opening waits up to this for the first session, and the JVM's first TLS
   * connection took up to 10 s on a loaded machine (load average 67 on 2 cores). A connected
   * backend returns from opening at once.
   */
  private static final Duration SESSION = Duration.ofSeconds(30);
  private static final Duration VALIDITY = Duration.ofDays(1);
  private static Properties systemProperties;
  private static TestingServer server;
  private static int securePort;
  @TempDir static Path dir;
  private static Path ca;
  private static Path clientCert;
  private static Path clientKey;
  private static Path strangerCert;
  private static Path strangerKey;

  @BeforeAll
  static void startServer() throws Exception {
    systemProperties = (Properties) System.getProperties().clone();
    Certificates.Authority authority = Certificates.Authority.create("zookeeper test CA", VALIDITY);
    ca = dir.resolve("ca.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    Path serverCert = dir.resolve("server.pem");
    Path serverKey = dir.resolve("server-key.pem");
    authority.issue("zookeeper", List.of("127.0.0.1", "localhost"), VALIDITY).writeTo(serverCert, serverKey);
    // ZooKeeper's PEM key store is one file: key and chain.
    Path serverKeyStore = dir.resolve("server-keystore.pem");
    Files.writeString(serverKeyStore, Files.readString(serverKey) + Files.readString(serverCert));
    clientCert = dir.resolve("client.pem");
    clientKey = dir.resolve("client-key.pem");
    authority.issue("billing", List.of(), VALIDITY).writeTo(clientCert, clientKey);
    strangerCert = dir.resolve("stranger.pem");
    strangerKey = dir.resolve("stranger-key.pem");
    Certificates.Authority.create("another CA", VALIDITY)
        .issue("billing", List.of(), VALIDITY).writeTo(strangerCert, strangerKey);

    securePort = ZooKeeperServers.port();
    Map<String, Object> config = new HashMap<>();
    config.put("minSessionTimeout", String.valueOf(2 * ZooKeeperServers.TICK_MILLIS));
    config.put("maxSessionTimeout", "60000");
    config.put("secureClientPort", String.valueOf(securePort));
    config.put("serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory");
    config.put("ssl.keyStore.location", serverKeyStore.toString());
    config.put("ssl.keyStore.type", "PEM");
    config.put("ssl.trustStore.location", ca.toString());
    config.put("ssl.trustStore.type", "PEM");
    config.put("ssl.clientAuth", "need");
    // The x509 provider is registered from a system property the server sets as it parses its
    // config; the registry reads them once, so it starts again for this server.
    ProviderRegistry.reset();
    server = new TestingServer(
        new InstanceSpec(null, ZooKeeperServers.port(), ZooKeeperServers.port(),
            ZooKeeperServers.port(), true, -1, ZooKeeperServers.TICK_MILLIS, 1000, config),
        true);
  }

  @AfterAll
  static void stopServer() {
    try {
      ZooKeeperServers.closeQuietly(server);
    } finally {
      System.setProperties(systemProperties);
      ProviderRegistry.reset();
    }
  }

  private static String uri(Duration sessionTimeout, Path cert, Path key) {
    return ZooKeeperServers.uri("127.0.0.1:" + securePort, "", sessionTimeout)
        + "&ca=" + ca + "&cert=" + cert + "&key=" + key;
  }

  @Test
  void leasesAreAcquiredAndReleasedOverMutualTls() {
    String secureBefore = System.getProperty("zookeeper.client.secure");
    try (LeaseBackend a = LeaseBackend.open(uri(SESSION, clientCert, clientKey));
        LeaseBackend b = LeaseBackend.open(uri(SESSION, clientCert, clientKey))) {
      assertThat(System.getProperty("zookeeper.client.secure"))
          .as("the TLS settings are the connection's own, not the JVM's")
          .isEqualTo(secureBefore);
      Lease first = a.newLease(SuiteSettings.forTtl("tls", "a", TTL).build());
      Lease second = b.newLease(SuiteSettings.forTtl("tls", "b", TTL).build());
      assertThat(first.acquire().join()).isTrue();
      assertThat(second.acquire().join()).isFalse();
      long token = first.fencingToken().orElseThrow();
      first.release().join();
      assertThat(second.acquire().join()).isTrue();
      assertThat(second.fencingToken().orElseThrow()).isGreaterThan(token);
    }
  }

  @Test
  void aCertificateOfAnotherAuthorityIsRefusedAndSaysWhatToCheck() {
    // A short session timeout: opening waits that long for a connection that never comes.
    Duration patience = Duration.ofMillis(500);
    try (LeaseBackend stranger = LeaseBackend.open(uri(patience, strangerCert, strangerKey))) {
      Lease lease = stranger.newLease(SuiteSettings.forTtl("tls", "stranger", patience).build());
      assertThatThrownBy(() -> lease.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(LeaseException.class)
          .hasMessageContaining("not connected to ZooKeeper")
          .hasMessageContaining("TLS: check")
          .hasMessageContaining(strangerCert.toString());
    }
  }

  @Test
  void aKeyThatDoesNotFitItsCertificateIsRefusedWhenOpened() {
    assertThatThrownBy(() -> LeaseBackend.open(uri(TTL, clientCert, strangerKey)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("key file '" + strangerKey + "' does not fit");
    assertThatThrownBy(() -> LeaseBackend.open(uri(TTL, clientCert, dir.resolve("missing.pem"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("key file '" + dir.resolve("missing.pem") + "'");
    assertThatThrownBy(() -> LeaseBackend.open(
            ZooKeeperServers.uri("127.0.0.1:" + securePort, "", TTL) + "&ca=" + clientKey))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ca file '" + clientKey + "'");
  }
}
