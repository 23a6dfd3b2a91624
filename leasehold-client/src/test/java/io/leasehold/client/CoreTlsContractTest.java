package io.leasehold.client;

import io.leasehold.server.Certificates;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.TlsConfig;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * The whole contract on a real 3-node core over mutual TLS: every client port and the Raft port
 * speak TLS only, every contender shows a client certificate of the cluster's authority (through
 * its own TCP proxies, which relay the encrypted bytes, so partitions work as in plaintext).
 * Certificates are made here, never committed.
 */
@Tag("integration")
class CoreTlsContractTest extends LeaseContractSuite {

  private static final Duration VALID = Duration.ofDays(1);

  private static LocalCluster cluster;
  private static ClientTls tls;

  @BeforeAll
  static void startCluster() {
    try {
      Path dir = Files.createTempDirectory(Path.of("target"), "tls-contract-");
      Certificates.Authority ca = Certificates.Authority.create("contract CA", VALID);
      Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate());
      ca.issue("node", List.of("127.0.0.1", "localhost"), VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));
      ca.issue("contender", List.of(), VALID).writeTo(dir.resolve("client.pem"), dir.resolve("client-key.pem"));
      TlsConfig nodes = TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem"));
      cluster =
          LocalCluster.start(
              3, 0, dir.resolve("data"), c -> c.withElectionTimeout(Duration.ofMillis(150)).withTls(nodes));
      tls =
          CoreBackendProvider.target(
                  "leaseholds://127.0.0.1:1?ca=" + dir.resolve("ca.pem") + "&cert=" + dir.resolve("client.pem")
                      + "&key=" + dir.resolve("client-key.pem"))
              .tls();
      CoreFixture.awaitServing(cluster, tls);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected ContractFixture createFixture() {
    return new CoreFixture(cluster, tls);
  }
}
