package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.server.CoreNode;
import io.leasehold.server.Limits;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.SuiteSettings;
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
 * A node ends every client connection after {@code --max-connection-age} (so that what a
 * connection was given when it was made — a CA's trust, a watch's right — lasts a bounded time),
 * and a holder goes on through it: its calls move to a new connection, its keep-alive stream and
 * loss watch, ended with their old connection once the grace has passed, resume on the new one,
 * and no lease is lost.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ConnectionAgeTest {

  @Test
  void aHolderKeepsItsLeaseWhileTheNodeEndsItsConnectionsOneAfterAnother() throws Exception {
    Path dir = Files.createTempDirectory(Path.of("target"), "connection-age-");
    try (LocalCluster cluster =
            LocalCluster.start(
                1, 0, dir, c -> c.withLimits(Limits.DEFAULTS.withConnections(Duration.ofSeconds(1), Duration.ofSeconds(5))));
        LeaseBackend holder = LeaseBackend.open(cluster.uri());
        CoreClient operator = new CoreClient(CoreBackendProvider.target(cluster.uri()), Duration.ofSeconds(5))) {
      CoreNode node = cluster.node(0).orElseThrow();
      Lease lease = holder.newLease(SuiteSettings.forTtl("aged", "holder", Duration.ofSeconds(6)).operationTimeout(Duration.ofSeconds(3)).build());
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      lease.onLost(losses::add);
      assertThat(lease.acquire().get(30, TimeUnit.SECONDS)).isTrue();
      long before = node.snapshot().clientConnectionsTotal();

      // A holder's renewals go over its keep-alive stream, which stays on its aged connection
      // until the grace (10 s) has passed, then ends; the holder opens a new connection to resume
      // it (and its loss watch). Four new connections are three such ends at least.
      await("the node ends connections and the holder makes new ones")
          .atMost(Duration.ofSeconds(120))
          .until(() -> {
            assertThat(losses).as("losses while connections age").isEmpty();
            assertThat(lease.checkAlive()).as("the lease is held while connections age").isTrue();
            return node.snapshot().clientConnectionsTotal() >= before + 4;
          });

      // The loss watch still works: an operator's delete is told at once.
      DeleteRequest delete =
          DeleteRequest.newBuilder().setCall(operator.newCall()).setKey(LeaseWatch.LEASE_PREFIX + "aged").build();
      assertThat(operator.<DeleteResponse>call((s, o) -> s.delete(delete, o)).get(30, TimeUnit.SECONDS).getDeleted()).isTrue();
      await("the holder is told of the delete").atMost(Duration.ofSeconds(30)).until(() -> !losses.isEmpty());
      assertThat(losses.get(0).kind()).isEqualTo(LeaseLost.Kind.REVOKED);
    }
  }
}
