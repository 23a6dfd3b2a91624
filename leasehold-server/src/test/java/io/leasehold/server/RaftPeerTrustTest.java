package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Raft port takes the cluster's nodes only. Clients hold certificates from the same
 * authority; found in review: any of them could open the Raft port and vote, append entries or
 * install a snapshot, since the port checked only the authority.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class RaftPeerTrustTest {

  private static final Duration DAY = Duration.ofDays(1);
  private final Certificates.Authority ca = Certificates.Authority.create("test-ca", DAY);
  /** Trusts every chain: what is tested is the node check alone. */
  private final NodeTls.PeersOnly raftPort = new NodeTls.PeersOnly(new TrustingAll(), Set.of("127.0.0.1", "node-2.example"));

  @Test
  void aNodeCertificateNamingAPeerHostIsTaken() {
    X509Certificate node = ca.issue("n1", List.of("127.0.0.1", "localhost"), DAY).certificate();
    X509Certificate byName = ca.issue("n2", List.of("NODE-2.example"), DAY).certificate();

    assertThatCode(() -> raftPort.checkClientTrusted(new X509Certificate[] {node}, "RSA", (SSLEngine) null))
        .doesNotThrowAnyException();
    assertThatCode(() -> raftPort.checkClientTrusted(new X509Certificate[] {byName}, "RSA", (SSLEngine) null))
        .doesNotThrowAnyException();
  }

  @Test
  void aClientCertificateOfTheSameAuthorityIsRefused() {
    X509Certificate client = ca.issue("app", List.of(), DAY).certificate();

    assertThatThrownBy(() -> raftPort.checkClientTrusted(new X509Certificate[] {client}, "RSA", (SSLEngine) null))
        .isInstanceOf(CertificateException.class)
        .hasMessageContaining("the Raft port takes nodes only")
        .hasMessageContaining("CN=app");
  }

  @Test
  void aServerCertificateForAnotherHostIsRefused() {
    X509Certificate stranger = ca.issue("n9", List.of("10.9.9.9"), DAY).certificate();

    assertThatThrownBy(() -> raftPort.checkClientTrusted(new X509Certificate[] {stranger}, "RSA", (Socket) null))
        .isInstanceOf(CertificateException.class)
        .hasMessageContaining("names none of the cluster's hosts [127.0.0.1, node-2.example]");
  }

  private static final class TrustingAll extends X509ExtendedTrustManager {
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {}

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {}

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }
  }
}
