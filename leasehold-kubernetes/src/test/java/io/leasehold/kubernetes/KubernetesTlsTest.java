package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.server.Certificates;
import io.leasehold.testkit.SuiteSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.interfaces.ECPrivateKey;
import java.time.Duration;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.bouncycastle.asn1.ASN1ObjectIdentifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The backend over HTTPS with a client certificate, configured as a user configures kubectl: a
 * kubeconfig whose cluster names the CA and whose user names a client certificate and key. The
 * server (a {@link TlsFront} before the mock API server) requires a client certificate of the
 * cluster's CA, as an API server with {@code --client-ca-file} does. Certificates are made here,
 * in a temporary directory, and never committed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class KubernetesTlsTest {

  private static final String NAMESPACE = "tls";
  private static final Duration VALID = Duration.ofHours(1);

  private final MockApiServer server = new MockApiServer();
  private final Certificates.Authority clusterCa = Certificates.Authority.create("cluster CA", VALID);
  private final Certificates.Authority otherCa = Certificates.Authority.create("another CA", VALID);
  private final TlsFront front = new TlsFront(server.address(),
      clusterCa.issue("kube-apiserver", List.of("127.0.0.1", "localhost"), VALID),
      clusterCa.certificate(), clusterCa.certificate());
  private final Path dir = tempDir();

  @AfterAll
  void stop() throws IOException {
    front.close();
    server.close();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  @Test
  void aKubeconfigWithTheClustersCaAndAClientCertificateAcquiresAndReleasesOverHttps() throws Exception {
    Path kubeconfig = kubeconfig("good", clusterCa, clusterCa.issue("my-app", List.of(), VALID));
    // Exactly as an application outside the cluster: $KUBECONFIG (here its system property) and
    // the URI, with the namespace taken from the kubeconfig's context.
    LeaseBackend backend;
    System.setProperty(Config.KUBERNETES_KUBECONFIG_FILE, kubeconfig.toString());
    try {
      backend = LeaseBackend.open("kubernetes:");
    } finally {
      System.clearProperty(Config.KUBERNETES_KUBECONFIG_FILE);
    }
    try (backend) {
      assertThat(backend.uri()).isEqualTo("kubernetes:?namespace=" + NAMESPACE);
      io.leasehold.Lease lease = backend.newLease(settings("over-https"));

      assertThat(lease.acquire().get()).isTrue();
      assertThat(lease.checkAlive()).isTrue();
      assertThat(read("over-https").getSpec().getHolderIdentity()).isEqualTo(lease.holder().toString());

      lease.release().get();
      assertThat(lease.checkAlive()).isFalse();
      assertThat(read("over-https").getSpec().getHolderIdentity()).isEmpty();
    }
  }

  @Test
  void aClientThatDoesNotTrustTheServersCaIsRefusedWithAClearError() {
    Path kubeconfig = kubeconfig("wrong-ca", otherCa, clusterCa.issue("my-app", List.of(), VALID));
    try (KubernetesBackend backend = backend(kubeconfig)) {
      io.leasehold.Lease lease = backend.newLease(settings("untrusted"));

      assertThatThrownBy(() -> lease.acquire().join())
          .cause()
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("the TLS handshake with the API server " + front.url() + " failed")
          .hasMessageContaining("certificate-authority");
      assertThat(lease.checkAlive()).isFalse();
      assertThat(read("untrusted")).as("nothing reached the server").isNull();
    }
  }

  @Test
  void aClientWithoutACertificateOfTheClustersCaIsRefused() {
    Path stranger = kubeconfig("stranger", clusterCa, otherCa.issue("my-app", List.of(), VALID));
    Path anonymous = kubeconfig("anonymous", clusterCa, null);
    for (Path kubeconfig : List.of(stranger, anonymous)) {
      try (KubernetesBackend backend = backend(kubeconfig)) {
        io.leasehold.Lease lease = backend.newLease(settings("no-entry"));

        assertThatThrownBy(() -> lease.acquire().join())
            .as(kubeconfig.getFileName().toString())
            .cause()
            .isInstanceOf(LeaseStoreUnavailableException.class)
            .hasMessageContaining("could not get Lease " + NAMESPACE + "/no-entry");
        assertThat(lease.checkAlive()).isFalse();
      }
    }
    assertThat(read("no-entry")).as("nothing reached the server").isNull();
  }

  /** As {@code KubernetesBackend.using} is meant: a client built from the user's kubeconfig. */
  private static KubernetesBackend backend(Path kubeconfig) {
    Config config = Config.fromKubeconfig(kubeconfig.toFile());
    config.setRequestRetryBackoffLimit(0);
    return KubernetesBackend.using(new KubernetesClientBuilder().withConfig(config).build(), NAMESPACE);
  }

  /**
   * A kubeconfig as {@code kubectl config set-cluster --certificate-authority} and {@code
   * set-credentials --client-certificate --client-key} write it, with its files beside it.
   */
  private Path kubeconfig(String name, Certificates.Authority trusted, Certificates.Issued client) {
    Path ca = dir.resolve(name + "-ca.pem");
    Certificates.writeCertificates(ca, trusted.certificate());
    StringBuilder user = new StringBuilder("  user: {}\n");
    if (client != null) {
      Path cert = dir.resolve(name + "-client.pem");
      Path key = dir.resolve(name + "-client-key.pem");
      Certificates.writeCertificates(cert, client.certificate());
      writeEcKey(key, client.key());
      user = new StringBuilder("  user:\n")
          .append("    client-certificate: ").append(cert).append('\n')
          .append("    client-key: ").append(key).append('\n');
    }
    String yaml = "apiVersion: v1\nkind: Config\n"
        + "clusters:\n- name: test\n  cluster:\n    server: " + front.url() + "\n"
        + "    certificate-authority: " + ca + "\n"
        + "users:\n- name: app\n" + user
        + "contexts:\n- name: test\n  context:\n    cluster: test\n    user: app\n    namespace: " + NAMESPACE + "\n"
        + "current-context: test\n";
    Path file = dir.resolve(name + ".kubeconfig");
    try {
      Files.writeString(file, yaml);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return file;
  }

  /**
   * The key as {@code openssl ecparam -genkey} writes it: SEC1, {@code BEGIN EC PRIVATE KEY},
   * naming its curve. fabric8 reads a PKCS#8 key ({@code BEGIN PRIVATE KEY}) as RSA unless told
   * {@code clientKeyAlgo EC} (docs/kubernetes.md), so the test writes the form users have.
   */
  private static void writeEcKey(Path file, PrivateKey key) {
    try {
      byte[] sec1 = new org.bouncycastle.asn1.sec.ECPrivateKey(
          256, ((ECPrivateKey) key).getS(), new ASN1ObjectIdentifier("1.2.840.10045.3.1.7")).getEncoded();
      String pem = "-----BEGIN EC PRIVATE KEY-----\n"
          + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(sec1)
          + "\n-----END EC PRIVATE KEY-----\n";
      Files.writeString(file, pem, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private Lease read(String name) {
    return server.admin().resources(Lease.class).inNamespace(NAMESPACE).withName(name).get();
  }

  /**
   * Generous: the first TLS handshake of a cold client on a loaded machine must fail as a refusal,
   * not time out. No retries: a refusal is the same every time, and each try costs a handshake.
   */
  private static LeaseSettings settings(String name) {
    return SuiteSettings.forTtl(name, "pod-a", Duration.ofSeconds(10))
        .operationTimeout(Duration.ofSeconds(5))
        .acquireRetries(0)
        .build();
  }

  private static Path tempDir() {
    try {
      return Files.createTempDirectory("leasehold-k8s-tls");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
