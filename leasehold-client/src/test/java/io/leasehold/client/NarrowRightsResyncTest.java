package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.AclRights;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.server.AccessSettings;
import io.leasehold.server.Certificates;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.server.TlsConfig;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A holder whose identity may use only its own lease names ({@code lease c/}) re-reads its leases
 * after a gap in its lease watch. The re-read used to ask for every lease key of the cluster,
 * which such an identity may not read: it was refused, tried again every 100 ms for good, and the
 * holder never learnt of a deletion it had missed. It now asks only for the keys of its own
 * sessions, which needs no right on any name.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class NarrowRightsResyncTest {

  private static final Duration VALID = Duration.ofDays(1);
  private static final Duration PATIENCE = Duration.ofSeconds(60);
  /** Entries between snapshots: the writes during the cut are more than this. */
  private static final int SNAPSHOT_EVERY = 100;

  @Test
  void aHolderWithRightsOnlyOnItsOwnNamesReReadsItsLeasesAfterAGap() throws Exception {
    Path dir = Files.createTempDirectory(Path.of("target"), "narrow-resync-");
    Certificates.Authority ca = Certificates.Authority.create("narrow CA", VALID);
    Certificates.writeCertificates(dir.resolve("ca.pem"), ca.certificate());
    ca.issue("node", List.of("127.0.0.1", "localhost"), VALID).writeTo(dir.resolve("node.pem"), dir.resolve("node-key.pem"));
    for (String name : List.of("root", "carol")) {
      ca.issue(name, List.of(), VALID).writeTo(dir.resolve(name + ".pem"), dir.resolve(name + "-key.pem"));
    }
    TlsConfig tls = TlsConfig.of(dir.resolve("node.pem"), dir.resolve("node-key.pem"), dir.resolve("ca.pem"));
    try (LocalCluster cluster =
            LocalCluster.start(
                1, 0, dir.resolve("data"),
                c -> c.withTls(tls)
                    .withAccess(AccessSettings.DEFAULT.withRootIdentity("CN=root"))
                    .withSnapshots(SNAPSHOT_EVERY, NodeConfig.DEFAULT_LOG_SEGMENT_BYTES));
        CoreClient root = new CoreClient(CoreBackendProvider.target(uri(dir, cluster.peers().get(0).clientEndpoint(), "root")), Duration.ofSeconds(5))) {
      await("access control is on").atMost(PATIENCE).ignoreExceptions()
          .until(() -> AclCalls.list(root).get(10, TimeUnit.SECONDS).getEnabled());
      AclCalls.grant(root, AclCalls.entry("CN=carol", AclRights.parse("lease"), "c/")).get(30, TimeUnit.SECONDS);
      Peer node = cluster.peers().get(0);
      try (TcpProxy proxy = TcpProxy.start(new InetSocketAddress(node.host(), node.clientPort()));
          LeaseBackend carol = LeaseBackend.open(uri(dir, "127.0.0.1:" + proxy.port(), "carol"))) {
        Duration ttl = Duration.ofSeconds(60);
        Lease kept = carol.newLease(SuiteSettings.forTtl("c/kept", "carol", ttl).build());
        Lease deleted = carol.newLease(SuiteSettings.forTtl("c/deleted", "carol", ttl).build());
        List<LeaseLost> losses = new CopyOnWriteArrayList<>();
        deleted.onLost(losses::add);
        assertThat(kept.acquire().get(30, TimeUnit.SECONDS)).isTrue();
        assertThat(deleted.acquire().get(30, TimeUnit.SECONDS)).isTrue();
        LeaseWatch watch = ((CoreBackend) carol).leaseWatch();
        long before = watch.resyncedAt();

        // Cut off, carol misses the deletion of one of its keys and enough writes for a snapshot;
        // the node restarts from it, so carol's watch resumes from before its history.
        proxy.blackhole();
        DeleteRequest delete =
            DeleteRequest.newBuilder().setCall(root.newCall()).setKey(LeaseWatch.LEASE_PREFIX + "c/deleted").build();
        assertThat(root.<DeleteResponse>call((s, o) -> s.delete(delete, o)).get(30, TimeUnit.SECONDS).getDeleted()).isTrue();
        ByteString value = ByteString.copyFromUtf8("churn");
        for (int i = 0; i < 3 * SNAPSHOT_EVERY / 2; i++) {
          PutRequest put = PutRequest.newBuilder().setCall(root.newCall()).setKey("churn/" + (i % 10)).setValue(value).build();
          root.<PutResponse>call((s, o) -> s.put(put, o)).get(30, TimeUnit.SECONDS);
        }
        cluster.restartAll();
        proxy.dropConnections();
        proxy.heal();

        await("carol's lease watch re-reads carol's leases after its history ran out")
            .atMost(PATIENCE)
            .until(() -> watch.resyncedAt() > before);
        await("the deleted lease is reported lost").atMost(PATIENCE).until(() -> !losses.isEmpty());
        assertThat(deleted.checkAlive()).isFalse();
        assertThat(kept.checkAlive()).as("the lease still in the core is still held").isTrue();
      }
    }
  }

  private static String uri(Path dir, String hostPort, String name) {
    return "leaseholds://" + hostPort + "?ca=" + dir.resolve("ca.pem") + "&cert=" + dir.resolve(name + ".pem")
        + "&key=" + dir.resolve(name + "-key.pem");
  }
}
