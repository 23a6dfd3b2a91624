package io.leasehold.bench.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.bench.cluster.ManagedCluster.Member;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.client.FourLetterWordMain;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each managed cluster for real: three child processes serve leases through the backend URI, the
 * leader found by asking the members is the one whose death forces an election (and the one that
 * says so to the store's own client), and a killed member comes back on its data. Two of three
 * killed leave no leader: a {@code leader()} that named any member that answers would fail there.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class ManagedClustersTest {

  /** Elections take seconds; a restarted JVM on two busy cores takes longer. */
  private static final Duration FAILOVER = Duration.ofSeconds(90);

  @TempDir Path temp;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"core", "etcd", "zookeeper"})
  void aClusterServesLeasesLosesItsLeaderElectsAnotherAndTakesItsMembersBack(String kind) throws Exception {
    Path workDir = temp.resolve(kind);
    Path keptLogs = temp.resolve(kind + "-logs");
    List<ProcessHandle> started;
    List<String> ids;
    try (ManagedCluster cluster = ManagedClusters.start(kind, workDir)) {
      cluster.keepLogsIn(keptLogs);
      ids = cluster.members().stream().map(Member::id).toList();
      assertThat(cluster.name()).isEqualTo(kind);
      assertThat(cluster.settings()).isNotBlank();
      List<Member> members = cluster.members();
      assertThat(members).hasSize(3).allSatisfy(m -> assertThat(m.process()).isPresent());
      started = members.stream().map(m -> m.process().orElseThrow()).toList();
      // The handles are the servers themselves (their CPU and memory are measured), not a shell.
      assertThat(started)
          .allSatisfy(p -> assertThat(p.info().command())
              .hasValueSatisfying(c -> assertThat(Path.of(c).getFileName().toString()).isIn("java", "etcd")));
      assertThat(workDir.resolve(members.get(0).id() + ".log")).isNotEmptyFile();

      int first = cluster.leader().orElseThrow();
      assertThat(saysItLeads(kind, members.get(first).endpoint())).as("member %d leads", first).isTrue();
      try (LeaseBackend backend = LeaseBackend.open(cluster.backendUri())) {
        assertThat(newLease(backend, "before").acquire().get(30, TimeUnit.SECONDS)).isTrue();
        // The store's own count sees the one lease held (the ready probe released its own).
        await(kind + " counts one held lease")
            .atMost(FAILOVER)
            .until(cluster::heldLeases, c -> c.isPresent() && c.getAsLong() == 1);

        cluster.kill(first);
        assertThat(started.get(first).isAlive()).isFalse();
        assertThat(cluster.members().get(first).process()).isEmpty();
        int second =
            await("another " + kind + " leader")
                .atMost(FAILOVER)
                .until(cluster::leader, Optional::isPresent)
                .orElseThrow();
        assertThat(second).isNotEqualTo(first);
        assertThat(saysItLeads(kind, members.get(second).endpoint())).as("member %d leads", second).isTrue();
        awaitAcquired(backend, "after-the-leader-died");

        cluster.kill(second);
        await("no " + kind + " leader with one member of three")
            .atMost(FAILOVER)
            .until(() -> cluster.leader().isEmpty());

        // The survivor needs the restarted member for a majority, so restart() returning means
        // that it rejoined and a leader is elected.
        cluster.restart(first);
        assertThat(cluster.members().get(first).process()).isPresent();
        assertThat(cluster.leader()).isPresent();
        awaitAcquired(backend, "after-a-restart");
        assertThat(cluster.members().get(second).process()).isEmpty();
        started = List.of(
            cluster.members().get(first).process().orElseThrow(),
            cluster.members().get(3 - first - second).process().orElseThrow());
      }
    }
    assertThat(started).noneMatch(ProcessHandle::isAlive);
    assertThat(workDir).isEmptyDirectory();
    // The logs outlive the cluster where asked: every member's, whole (restarts appended to it).
    assertThat(ids).allSatisfy(id -> assertThat(keptLogs.resolve(id + ".log")).isNotEmptyFile());
  }

  @Test
  void anUnknownKindIsRefusedWithTheKindsThatExist() {
    assertThatThrownBy(() -> ManagedClusters.start("consul", temp.resolve("consul")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("kind must be one of core, etcd, zookeeper; was 'consul'");
    assertThat(temp.resolve("consul")).doesNotExist();
  }

  @Test
  void aWorkDirHoldingOtherFilesIsRefusedAndLeftAlone() throws Exception {
    Path workDir = Files.createDirectories(temp.resolve("mine"));
    Path precious = Files.writeString(workDir.resolve("notes.txt"), "keep me");
    assertThatThrownBy(() -> ManagedClusters.start("core", workDir))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("workDir must be missing, empty, or left by an earlier managed cluster")
        .hasMessageContaining(workDir.toString());
    assertThat(precious).hasContent("keep me");
    assertThat(workDir).isDirectoryContaining(p -> p.equals(precious));
  }

  /**
   * A second opinion on {@code leader()}: asks the member at {@code endpoint} with the store's own
   * client (the core's stubs, jetcd, ZooKeeper's four-letter-word client) whether it leads.
   */
  private static boolean saysItLeads(String kind, String endpoint) throws Exception {
    int port = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
    switch (kind) {
      case "core" -> {
        ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        try {
          StatusResponse status =
              LeaseholdGrpc.newBlockingStub(channel)
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .status(StatusRequest.getDefaultInstance());
          return status.getNodes(0).getRole().equals("LEADER");
        } finally {
          channel.shutdownNow();
        }
      }
      case "etcd" -> {
        try (Client client = Client.builder().endpoints("http://" + endpoint).build()) {
          io.etcd.jetcd.maintenance.StatusResponse status =
              client.getMaintenanceClient().statusMember("http://" + endpoint).get(10, TimeUnit.SECONDS);
          return status.getLeader() == status.getHeader().getMemberId();
        }
      }
      case "zookeeper" -> {
        return FourLetterWordMain.send4LetterWord("127.0.0.1", port, "srvr").lines().anyMatch("Mode: leader"::equals);
      }
      default -> throw new IllegalArgumentException("kind " + kind);
    }
  }

  private static Lease newLease(LeaseBackend backend, String name) {
    return backend.newLease(LeaseSettings.builder(name, "managed-clusters-test").ttl(Duration.ofSeconds(10)).build());
  }

  /** Until the store has recovered enough for a write: an acquire may fail while it elects. */
  private static void awaitAcquired(LeaseBackend backend, String name) {
    Lease lease = newLease(backend, name);
    await("lease " + name + " acquired")
        .atMost(FAILOVER)
        .ignoreExceptions()
        .until(() -> lease.acquire().get(30, TimeUnit.SECONDS));
  }
}
