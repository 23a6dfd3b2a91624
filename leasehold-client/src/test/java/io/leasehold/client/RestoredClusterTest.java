package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.SaveSnapshotRequest;
import io.leasehold.core.proto.SnapshotChunk;
import io.leasehold.server.Backup;
import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.server.Peer;
import io.leasehold.testkit.SuiteSettings;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A cluster restored from a backup at the same addresses is another cluster. A holder that took a
 * lease after the backup, on a session the backup has, finds its session answered "alive" by the
 * restored cluster, which has the lease as free. Before anyone else may get it, the holder must
 * stop: the restored cluster says its identity changed, and grants no name until the longest TTL
 * in the backup has passed.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class RestoredClusterTest {

  /** Long enough that the holder reaches the restored cluster within its safe window. */
  private static final Duration TTL = Duration.ofSeconds(10);

  private LocalCluster cluster;
  private CoreNode restored;

  @AfterEach
  void stop() {
    if (restored != null) {
      restored.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aHolderFromBeforeARestoreStopsBeforeAnyoneElseGetsTheLease() throws Exception {
    Path root = Files.createTempDirectory(Path.of("target"), "restored-");
    cluster = LocalCluster.start(1, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(300)));
    cluster.awaitLeader(Duration.ofSeconds(60));
    Peer node = cluster.peers().get(0);
    NodeConfig config = cluster.node(0).orElseThrow().config();
    try (LeaseBackend holders = LeaseBackend.open(cluster.uri());
        LeaseBackend others = LeaseBackend.open(cluster.uri())) {
      // The holder's session exists before the backup; the lease is taken after it.
      Lease earlier = holders.newLease(SuiteSettings.forTtl("earlier", "holder", TTL).operationTimeout(Duration.ofSeconds(2)).build());
      List<LeaseLost> earlierLosses = new CopyOnWriteArrayList<>();
      earlier.onLost(earlierLosses::add);
      assertThat(earlier.acquire().get(30, TimeUnit.SECONDS)).isTrue();
      Backup backup = backup(node);
      Lease held = holders.newLease(SuiteSettings.forTtl("taken-after-the-backup", "holder", TTL).operationTimeout(Duration.ofSeconds(2)).build());
      List<LeaseLost> losses = new CopyOnWriteArrayList<>();
      held.onLost(losses::add);
      assertThat(held.acquire().get(30, TimeUnit.SECONDS)).isTrue();

      // The cluster is replaced by one restored from the backup, at the same address.
      cluster.stopNode(0);
      Path fresh = Files.createTempDirectory(Path.of("target"), "restored-node-");
      restored =
          CoreNode.startRestoring(
              NodeConfig.of(config.self(), config.peers(), fresh)
                  .withElectionTimeout(config.electionTimeout())
                  .withStartMode(NodeConfig.StartMode.BOOTSTRAP),
              new CoreNode.Restore(backup, 1_000));

      Lease other = others.newLease(SuiteSettings.forTtl("taken-after-the-backup", "other", TTL).operationTimeout(Duration.ofSeconds(2)).build());
      // What each refused attempt was told, for the failure message: "refused" while the restored
      // cluster keeps its names closed, an error while the node starts.
      List<Outcome> attempts = new CopyOnWriteArrayList<>();
      try {
        await("another owner gets the lease")
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(20))
            .until(
                () -> {
                  boolean got;
                  try {
                    got = Boolean.TRUE.equals(other.acquire().get(30, TimeUnit.SECONDS));
                  } catch (java.util.concurrent.ExecutionException unknownWhileTheNodeStarts) {
                    note(attempts, unknownWhileTheNodeStarts.getCause().toString());
                    return false;
                  }
                  if (!got) {
                    note(attempts, "refused");
                  }
                  if (got) {
                    assertThat(held.checkAlive()).as("the old holder, when another owner got the lease").isFalse();
                  }
                  return got;
                });
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        throw new AssertionError("no acquire on the restored cluster succeeded; its attempts: " + attempts, e);
      }
      assertThat(losses).as("the old holder was told (by its watch, or by the new identity)").isNotEmpty();
      // The lease in the backup too, on the same session: nothing but the identity tells.
      await("the holder of a lease the backup has learns it talks to another cluster")
          .atMost(Duration.ofSeconds(60))
          .until(() -> !earlierLosses.isEmpty());
      assertThat(earlierLosses).singleElement().satisfies(l -> {
        assertThat(l.kind()).isEqualTo(LeaseLost.Kind.INCONSISTENT);
        assertThat(l.detail()).contains("another cluster");
      });
      assertThat(other.fencingToken().orElseThrow()).as("tokens go on above the old cluster's").isGreaterThan(1_000);
    }
  }

  /** Keeps the outcomes in order, a run of equal ones as one entry: its count, first and last time. */
  private static void note(List<Outcome> attempts, String outcome) {
    LocalTime now = LocalTime.now();
    Outcome last = attempts.isEmpty() ? null : attempts.get(attempts.size() - 1);
    if (last != null && last.what.equals(outcome)) {
      last.count++;
      last.last = now;
    } else {
      attempts.add(new Outcome(outcome, now));
    }
  }

  private static final class Outcome {
    final String what;
    final LocalTime first;
    LocalTime last;
    int count = 1;

    Outcome(String what, LocalTime at) {
      this.what = what;
      this.first = at;
      this.last = at;
    }

    @Override
    public String toString() {
      return count + " × " + what + " (" + first + " to " + last + ")";
    }
  }

  private static Backup backup(Peer node) throws Exception {
    ManagedChannel channel = NettyChannelBuilder.forAddress(node.host(), node.clientPort()).usePlaintext().build();
    try {
      Iterator<SnapshotChunk> chunks =
          LeaseholdGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS).saveSnapshot(SaveSnapshotRequest.getDefaultInstance());
      ByteArrayOutputStream data = new ByteArrayOutputStream();
      long revision = -1;
      while (chunks.hasNext()) {
        SnapshotChunk chunk = chunks.next();
        if (revision < 0) {
          revision = chunk.getRevision();
        }
        ByteString part = chunk.getData();
        part.writeTo(data);
      }
      return new Backup(revision, System.currentTimeMillis(), data.toByteArray());
    } finally {
      channel.shutdownNow();
    }
  }
}
