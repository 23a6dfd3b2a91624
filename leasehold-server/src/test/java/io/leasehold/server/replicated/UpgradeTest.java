package io.leasehold.server.replicated;

import io.leasehold.server.DataDir;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.server.raft.LeaseStateMachine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.LeaseholdGrpc;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.state.Command;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Upgrades: a cluster written by this build is read, node by node, by a build
 * with a newer snapshot format; a node of this build refuses the newer format with a message that
 * says what to do; and an entry of a newer log format is refused before any of it is applied.
 *
 * <p>"A build with a newer format" is this build with the test hook of {@link Formats}: the system
 * property {@value Formats#SNAPSHOT_PROPERTY}, set while a node is started, makes that node write
 * snapshot format {@code Formats.SNAPSHOT + 1} and read every format up to it, as the next
 * version that bumps the format will. One 3-node cluster for the class.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("integration")
class UpgradeTest {

  private static final Duration PATIENCE = Duration.ofSeconds(60);
  /** A snapshot every 10 entries: a few writes give every node one. */
  private static final int SNAPSHOT_EVERY = 10;
  private static final int NEWER = Formats.SNAPSHOT + 1;

  private LocalCluster cluster;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final AtomicLong calls = new AtomicLong();

  @AfterEach
  void close() {
    System.clearProperty(Formats.SNAPSHOT_PROPERTY);
    channels.forEach(ManagedChannel::shutdownNow);
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void aClusterOfThisBuildIsUpgradedNodeByNodeToANewerSnapshotFormatAndCannotGoBack() throws Exception {
    cluster = LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "upgrade-"),
        c -> c.withElectionTimeout(Duration.ofMillis(300)).withSnapshots(SNAPSHOT_EVERY, 64 * 1024));
    cluster.awaitLeader(PATIENCE);
    for (Peer p : cluster.peers()) {
      channels.add(NettyChannelBuilder.forAddress(p.host(), p.clientPort()).usePlaintext().build());
    }
    for (int k = 0; k < SNAPSHOT_EVERY + 2; k++) {
      put("before/" + k);
    }
    for (int i = 0; i < 3; i++) {
      int node = i;
      await("node " + node + " wrote a snapshot").atMost(PATIENCE).until(() -> !snapshotFormats(node).isEmpty());
      assertThat(snapshotFormats(node)).as("this build's snapshots, without access control")
          .containsOnly(SnapshotCodec.SNAPSHOT_FORMAT);
    }

    // The rolling upgrade: each node in turn stopped and started as the newer build on its data.
    for (int i = 0; i < 3; i++) {
      cluster.stopNode(i);
      startAsNewerBuild(i);
      cluster.awaitLeader(PATIENCE);
      int node = i;
      put("during-" + i); // mixed versions serve writes (the log format is the same)
      assertThat(cluster.node(node).orElseThrow().loadedSnapshotIndex())
          .as("the newer build loaded this build's snapshot of node %d", node).isPositive();
    }
    for (int k = 0; k < SNAPSHOT_EVERY + 2; k++) {
      put("after/" + k);
    }
    for (int i = 0; i < 3; i++) {
      int node = i;
      await("node " + node + " wrote a snapshot of the newer format").atMost(PATIENCE).until(() -> snapshotFormats(node).contains(NEWER));
      await("node " + node + " has every key").atMost(PATIENCE)
          .until(() -> cluster.node(node).orElseThrow().localRead("after/" + (SNAPSHOT_EVERY + 1)).isPresent());
      assertThat(cluster.node(node).orElseThrow().localRead("before/0")).as("written by this build, read by the newer").isPresent();
      assertThat(cluster.node(node).orElseThrow().localRead("during-0")).as("written while versions were mixed").isPresent();
    }

    // Going back: a node of this build refuses the newer snapshot, with what to do; nothing lost.
    cluster.stopNode(0);
    assertThatThrownBy(() -> cluster.startNode(0))
        .hasStackTraceContaining("snapshot format " + NEWER + " is newer than this version of Leasehold reads (formats 1 to "
            + Formats.SNAPSHOT + "): a newer version wrote it. Run this node with that version or a later one");
    assertThat(cluster.node(0)).isEmpty();
    startAsNewerBuild(0);
    cluster.awaitLeader(PATIENCE);
    put("back");
    await("the node of the newer build serves again").atMost(PATIENCE)
        .until(() -> cluster.node(0).orElseThrow().localRead("back").isPresent());
  }

  @Test
  void anEntryOfANewerLogFormatIsRefusedAndFormatOneAddsNoByte() throws Exception {
    ByteString command = Command.newBuilder().setPut(PutRequest.newBuilder().setKey("k")).build().toByteString();
    Command newer = Command.parseFrom(command.concat(toProtobuf(LeaseStateMachine.stampField(1234, Formats.LOG + 1))).toByteArray());
    assertThat(newer.getLogFormat()).isEqualTo(Formats.LOG + 1);
    assertThat(newer.getStampMillis()).isEqualTo(1234);
    assertThatThrownBy(() -> Formats.refuseNewerLog(42, newer.getLogFormat(), Formats.LOG))
        .isInstanceOf(CoreState.NewerCommandException.class)
        .hasMessage("log entry 42 has log format " + (Formats.LOG + 1) + ", newer than this version of Leasehold reads"
            + " (up to " + Formats.LOG + "): a newer version wrote it. This node stops applying the log rather than"
            + " diverge from the nodes that read it; upgrade it to the version of the others, and it catches up");

    Command old = Command.parseFrom(command.concat(toProtobuf(LeaseStateMachine.stampField(1234, Formats.LOG))).toByteArray());
    assertThat(old.getLogFormat()).as("an entry written before the field existed").isZero();
    Formats.refuseNewerLog(42, old.getLogFormat(), Formats.LOG); // read as format 1
    Formats.refuseNewerLog(42, newer.getLogFormat(), Formats.LOG + 1); // the newer build reads it
  }

  private static ByteString toProtobuf(org.apache.ratis.thirdparty.com.google.protobuf.ByteString shaded) {
    return ByteString.copyFrom(shaded.toByteArray());
  }

  private void startAsNewerBuild(int node) {
    System.setProperty(Formats.SNAPSHOT_PROPERTY, String.valueOf(NEWER));
    try {
      cluster.startNode(node);
    } finally {
      System.clearProperty(Formats.SNAPSHOT_PROPERTY);
    }
  }

  /** A write through whichever node answers (a follower forwards it to the leader). */
  private void put(String key) {
    await("put " + key).atMost(PATIENCE).ignoreExceptions().until(() -> {
      for (int i = 0; i < channels.size(); i++) {
        if (cluster.node(i).isEmpty()) {
          continue;
        }
        try {
          LeaseholdGrpc.newBlockingStub(channels.get(i)).withDeadlineAfter(10, TimeUnit.SECONDS)
              .put(PutRequest.newBuilder().setCall(call()).setKey(key).setValue(ByteString.copyFromUtf8("v")).build());
          return true;
        } catch (RuntimeException e) {
          // not this node now: the next
        }
      }
      return false;
    });
  }

  private CallId call() {
    return CallId.newBuilder().setClientIdHigh(0x0516).setClientIdLow(3).setCallId(calls.incrementAndGet()).build();
  }

  /** {@return the format numbers in the headers of node {@code i}'s snapshot files} */
  private List<Integer> snapshotFormats(int i) throws IOException {
    Path storage = DataDir.storage(cluster.root().resolve(cluster.peers().get(i).id()));
    List<Integer> formats = new ArrayList<>();
    try (Stream<Path> files = Files.walk(storage)) {
      for (Path f : files.filter(p -> p.getFileName().toString().matches("snapshot\\.\\d+_\\d+")).toList()) {
        try (InputStream in = Files.newInputStream(f)) {
          DataInputStream data = new DataInputStream(in);
          data.readInt(); // LHSN
          formats.add(data.readInt());
        } catch (IOException vanished) {
          // purged while listed: the next look sees the newer one
        }
      }
    } catch (java.io.UncheckedIOException vanished) {
      return List.of();
    }
    return formats;
  }
}
