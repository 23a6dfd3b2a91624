package io.leasehold.etcd;

import static io.leasehold.etcd.SecuredEtcd.connected;
import static io.leasehold.etcd.SecuredEtcd.settings;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.server.Certificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backend against a real etcd that serves its clients over TLS only and requires client
 * certificates ({@code --client-cert-auth --trusted-ca-file}). Certificates are made here, in a
 * temporary directory, never committed: one authority for etcd and the client, and a second
 * authority etcd does not trust.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class EtcdTlsTest {

  @TempDir static Path dir;
  private static EtcdCluster cluster;
  private static Path ca;
  private static Path clientCert;
  private static Path clientKey;
  private static Path strangerCert;
  private static Path strangerKey;

  @BeforeAll
  static void startEtcd() {
    Duration validity = Duration.ofHours(1);
    Certificates.Authority authority = Certificates.Authority.create("etcd test CA", validity);
    ca = dir.resolve("ca.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    // The member's certificate names 127.0.0.1 only: reached as "localhost" it must be refused.
    Path serverCert = dir.resolve("etcd.pem");
    Path serverKey = dir.resolve("etcd-key.pem");
    authority.issue("etcd", List.of("127.0.0.1"), validity).writeTo(serverCert, serverKey);
    clientCert = dir.resolve("client.pem");
    clientKey = dir.resolve("client-key.pem");
    authority.issue("leasehold-client", List.of(), validity).writeTo(clientCert, clientKey);
    Certificates.Authority stranger = Certificates.Authority.create("another CA", validity);
    strangerCert = dir.resolve("stranger.pem");
    strangerKey = dir.resolve("stranger-key.pem");
    stranger.issue("leasehold-client", List.of(), validity).writeTo(strangerCert, strangerKey);
    cluster = EtcdCluster.start(1, new EtcdCluster.ServerTls(ca, serverCert, serverKey));
  }

  @AfterAll
  static void stopEtcd() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String hostPort() {
    return "127.0.0.1:" + cluster.clientAddress(0).getPort();
  }

  @Test
  void acquireAndReleaseWorkWithTheRightAuthorityAndClientCertificate() throws Exception {
    String uri = "etcds://" + hostPort() + "?ca=" + ca + "&cert=" + clientCert + "&key=" + clientKey;
    try (LeaseBackend viaUri = connected(LeaseBackend.open(uri));
        EtcdBackend viaBuilder = connected(
            EtcdBackend.builder("etcds://" + hostPort()).ca(ca).clientCertificate(clientCert, clientKey).build());
        Lease first = viaUri.newLease(settings("tls/job", "node-1"));
        Lease second = viaBuilder.newLease(settings("tls/job", "node-2"))) {
      assertThat(viaUri).isInstanceOf(EtcdBackend.class);
      assertThat(viaUri.uri()).isEqualTo(uri);
      assertThat(first.acquire().get(30, TimeUnit.SECONDS)).as("node-1 acquires over TLS").isTrue();
      assertThat(first.checkAlive()).isTrue();
      long token = first.fencingToken().orElseThrow();
      assertThat(second.acquire().get(30, TimeUnit.SECONDS)).as("node-2 while node-1 holds").isFalse();
      first.release().get(30, TimeUnit.SECONDS);
      assertThat(second.acquire().get(30, TimeUnit.SECONDS)).as("node-2 after the release").isTrue();
      assertThat(second.fencingToken().orElseThrow()).isGreaterThan(token);
      second.release().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void withoutAClientCertificateEtcdRefusesAndNothingIsHeld() {
    assertRefused("etcds://" + hostPort() + "?ca=" + ca, "tls/no-cert");
  }

  @Test
  void aClientCertificateFromAnotherAuthorityIsRefused() {
    assertRefused(
        "etcds://" + hostPort() + "?ca=" + ca + "&cert=" + strangerCert + "&key=" + strangerKey,
        "tls/stranger");
  }

  @Test
  void theMembersHostNameIsCheckedAgainstItsCertificate() {
    // The right authority and client certificate, but the member is dialled as "localhost", a
    // name its certificate does not carry: a machine that took over an address cannot pose as it.
    assertRefused(
        "etcds://localhost:" + cluster.clientAddress(0).getPort() + "?ca=" + ca + "&cert=" + clientCert
            + "&key=" + clientKey,
        "tls/wrong-host");
  }

  /** The acquire fails with a message that says TLS failed, and nothing is held or written. */
  private static void assertRefused(String uri, String name) {
    try (LeaseBackend backend = LeaseBackend.open(uri);
        Lease lease = backend.newLease(settings(name, "node-1"))) {
      assertThatThrownBy(() -> lease.acquire().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .as("acquire through %s", uri)
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("the TLS handshake with etcd (etcds://")
          .hasMessageContaining("check ca=, cert= and key=");
      assertThat(lease.checkAlive()).isFalse();
      assertThat(lease.fencingToken()).isEmpty();
    }
    assertNothingHeld(name);
  }

  private static void assertNothingHeld(String name) {
    try (EtcdBackend good =
        EtcdBackend.builder("etcds://" + hostPort()).ca(ca).clientCertificate(clientCert, clientKey).build()) {
      assertThat(good.read(name).get(30, TimeUnit.SECONDS).holding()).as("holder of %s in etcd", name).isEmpty();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
