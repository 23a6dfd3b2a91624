package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.server.Certificates;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.TlsConfig;
import io.leasehold.testkit.SuiteSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The core over mutual TLS on a real 3-node cluster: leases work (and survive a leader kill, so
 * Raft replication and elections run over TLS too); clients without a certificate, with one from
 * another authority, or in plaintext are refused and change nothing; replaced certificate files
 * are used without a restart. Certificates are made here, never committed.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreTlsTest {

  private static final Duration VALID = Duration.ofDays(1);
  private static final Duration PATIENCE = Duration.ofSeconds(30);
  private static final List<String> HOSTS = List.of("127.0.0.1", "localhost");

  private final List<AutoCloseable> closeLater = new ArrayList<>();
  private LocalCluster cluster;
  private Path dir;
  private Certificates.Authority ca;

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private <T extends AutoCloseable> T later(T closeable) {
    closeLater.add(closeable);
    return closeable;
  }

  /** A 3-node cluster whose nodes share one certificate from a new authority, mutual TLS. */
  private void startCluster(String name, Duration reloadEvery) throws Exception {
    dir = Files.createTempDirectory(Path.of("target"), name + "-");
    ca = Certificates.Authority.create("test CA", VALID);
    Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate());
    ca.issue("node", HOSTS, VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));
    ca.issue("client", List.of(), VALID).writeTo(dir.resolve("client.pem"), dir.resolve("client-key.pem"));
    TlsConfig tls =
        TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem")).withReloadEvery(reloadEvery);
    cluster =
        LocalCluster.start(
            3, 0, dir.resolve("data"), c -> c.withTls(tls));
  }

  private String hosts() {
    return cluster.peers().stream().map(Peer::clientEndpoint).collect(Collectors.joining(","));
  }

  private String secureUri(Path caFile, Path cert, Path key) {
    return "leaseholds://" + hosts() + "?ca=" + caFile + (cert == null ? "" : "&cert=" + cert + "&key=" + key);
  }

  private CoreClient client(String uri) {
    return later(new CoreClient(CoreBackendProvider.target(uri), Duration.ofSeconds(2)));
  }

  private static PutResponse put(CoreClient client, String key) throws Exception {
    PutRequest put = PutRequest.newBuilder().setCall(client.newCall()).setKey(key).setValue(ByteString.copyFromUtf8("v")).build();
    return client.<PutResponse>call((s, o) -> s.put(put, o)).get(30, TimeUnit.SECONDS);
  }

  private static GetResponse get(CoreClient client, String key) throws Exception {
    GetRequest get = GetRequest.newBuilder().setKey(key).build();
    return client.<GetResponse>call((s, o) -> s.get(get, o)).get(30, TimeUnit.SECONDS);
  }

  private static io.leasehold.LeaseSettings.Builder settings(String owner, Duration ttl) {
    return SuiteSettings.forTtl("tls-lease", owner, ttl).operationTimeout(ttl.dividedBy(2));
  }

  @Test
  void leasesAreAcquiredRenewedAndReleasedOverMutualTlsAcrossALeaderKill() throws Exception {
    startCluster("tls-leases", TlsConfig.DEFAULT_RELOAD_EVERY);
    String uri = secureUri(dir.resolve("ca.pem"), dir.resolve("client.pem"), dir.resolve("client-key.pem"));
    // Through the registry, as applications open it: the leaseholds:// scheme is served.
    LeaseBackend holderBackend = later(LeaseBackend.open(uri));
    LeaseBackend otherBackend = later(LeaseBackend.open(uri));
    // Generous for a loaded machine: calls get half the TTL, an acquire is retried.
    Duration ttl = Duration.ofSeconds(6);
    Lease held = later(holderBackend.newLease(settings("holder", ttl).acquireRetries(3).build()));
    assertThat(held.acquire().get(30, TimeUnit.SECONDS)).isTrue();
    long token = held.fencingToken().orElseThrow();
    Lease other = later(otherBackend.newLease(settings("other", ttl).build()));
    assertThat(other.acquire().get(30, TimeUnit.SECONDS)).as("another owner's acquire while held").isFalse();

    // Replication and the election run over the nodes' TLS: the lease stays held past a TTL.
    int leader = cluster.leader().orElseThrow();
    cluster.stopNode(leader);
    assertThat(cluster.awaitLeader(PATIENCE)).isNotEqualTo(leader);
    await("renewals reach the new leader over TLS").during(ttl.plusSeconds(1)).atMost(ttl.multipliedBy(4)).until(held::checkAlive);
    assertThat(held.fencingToken()).hasValue(token);

    held.release().get(30, TimeUnit.SECONDS);
    assertThat(other.acquire().get(30, TimeUnit.SECONDS)).as("another owner's acquire after the release").isTrue();
    assertThat(other.fencingToken().orElseThrow()).isGreaterThan(token);
  }

  @Test
  void clientsWithoutAGoodCertificateOrInPlaintextAreRefusedAndChangeNothing() throws Exception {
    startCluster("tls-refusals", TlsConfig.DEFAULT_RELOAD_EVERY);
    Path caFile = dir.resolve("ca.pem");
    Certificates.Authority stranger = Certificates.Authority.create("another CA", VALID);
    stranger.issue("intruder", List.of(), VALID).writeTo(dir.resolve("intruder.pem"), dir.resolve("intruder-key.pem"));

    CoreClient noCertificate = client(secureUri(caFile, null, null));
    assertThatThrownBy(() -> put(noCertificate, "refused/no-cert"))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("TLS handshake failed");

    CoreClient otherAuthority = client(secureUri(caFile, dir.resolve("intruder.pem"), dir.resolve("intruder-key.pem")));
    assertThatThrownBy(() -> put(otherAuthority, "refused/other-ca"))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("TLS handshake failed");

    CoreClient plaintext = client("leasehold://" + hosts());
    assertThatThrownBy(() -> put(plaintext, "refused/plaintext"))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("no node of");

    // A client with the right certificate sees that none of them wrote anything.
    CoreClient good = client(secureUri(caFile, dir.resolve("client.pem"), dir.resolve("client-key.pem")));
    for (String key : List.of("refused/no-cert", "refused/other-ca", "refused/plaintext")) {
      assertThat(get(good, key).getKvsList()).as(key).isEmpty();
    }
    assertThat(put(good, "accepted").getKv().getKey()).isEqualTo("accepted");
  }

  @Test
  void replacedCertificateFilesAreUsedWithoutARestart() throws Exception {
    startCluster("tls-rotation", Duration.ofMillis(100));
    Certificates.Authority next = Certificates.Authority.create("next CA", VALID);
    Path nextCa = dir.resolve("next-ca.pem");
    Certificates.writeCertificates(nextCa, next.certificate());
    next.issue("next-client", List.of(), VALID).writeTo(dir.resolve("next-client.pem"), dir.resolve("next-client-key.pem"));
    String nextUri = secureUri(nextCa, dir.resolve("next-client.pem"), dir.resolve("next-client-key.pem"));

    // Before the rotation a client that trusts only the new authority cannot talk to the nodes.
    CoreClient early = client(nextUri);
    assertThatThrownBy(() -> put(early, "rotation/early"))
        .cause()
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("TLS handshake failed");

    // The operator's rotation: trust both authorities (nodes still show each other old
    // certificates on connections being made), then the nodes' new certificate and key.
    Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate(), next.certificate());
    next.issue("node", HOSTS, VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));

    await("a client of the new authority is let in")
        .atMost(PATIENCE)
        .pollInterval(Duration.ofMillis(200))
        .ignoreExceptions()
        .until(() -> {
          try (CoreClient fresh = new CoreClient(CoreBackendProvider.target(nextUri), Duration.ofSeconds(2))) {
            return put(fresh, "rotation/after").getKv().getKey().equals("rotation/after");
          }
        });
    // The cluster kept serving throughout, leader and all.
    assertThat(cluster.awaitLeader(PATIENCE)).isBetween(0, 2);
  }
}
