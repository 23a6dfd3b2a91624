package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node formats its data directory only when told to (finding 4 of the safety review): never
 * over data, and never by itself when its data is gone. One-node clusters; nothing here waits for
 * more than a start.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("integration")
class StorageStartTest {

  private static final UnaryOperator<NodeConfig> FAST = c -> c.withElectionTimeout(Duration.ofMillis(100));

  private static final String HOW_TO_FORMAT =
      "; a node formats its data only on its first start in a new cluster, with --bootstrap; a node that"
          + " lost its data must not rejoin with an empty log, because it would vote, and acknowledged leases"
          + " could be lost and fencing tokens issued again";

  @TempDir Path root;

  /**
   * A data directory belongs to its node: {@code --id n2} on n1's directory used to start without
   * a word, voting with n1's log as a second n1; a node started with TLS, started again without,
   * served every client as anonymous. Both are refused now, naming the flag; a directory from
   * before the record is taken as its node's.
   */
  @Test
  void aDataDirectoryIsRefusedToAnotherNodeAndToAStartWithoutItsTls() throws Exception {
    Path dir = root.resolve("n1");
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, FAST)) {
      assertThat(Files.readString(dir.resolve(DataDir.OWNER_FILE))).contains("node=n1").contains("tls=false");
      Peer n1 = cluster.peers().get(0);
      cluster.stopNode(0);

      NodeConfig asN2 = FAST.apply(NodeConfig.of("n2", List.of(new Peer("n2", n1.host(), n1.clientPort())), dir));
      assertThatThrownBy(() -> CoreNode.start(asN2).close())
          .isInstanceOf(StartRefusedException.class)
          .hasMessageStartingWith("node n2 refuses to start: --data-dir " + dir + " belongs to node n1 (node.properties),"
              + " not to --id n2: start node n1 with it");

      // A directory from before the record: taken as n1's, and the record written.
      Files.delete(dir.resolve(DataDir.OWNER_FILE));
      cluster.startNode(0);
      assertThat(Files.readString(dir.resolve(DataDir.OWNER_FILE))).contains("node=n1");
      cluster.stopNode(0);

      // Started with TLS once, it is not started without.
      Files.writeString(dir.resolve(DataDir.OWNER_FILE), "node=n1\ntls=true\n");
      assertThatThrownBy(() -> cluster.startNode(0))
          .isInstanceOf(StartRefusedException.class)
          .hasMessageContaining("belongs to a node started with TLS (node.properties), and this start has none: give"
              + " --tls-cert, --tls-key and --tls-ca");
    }
  }

  @Test
  void aNodeWhoseDirectoryWasEmptiedOrDeletedIsRefusedAndNothingIsCreated() throws IOException {
    Path dir = root.resolve("n1");
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, FAST)) {
      cluster.stopNode(0);
      deleteContents(dir);

      assertThatThrownBy(() -> cluster.startNode(0))
          .isInstanceOf(StartRefusedException.class)
          .hasMessage("node n1 refuses to start: --data-dir " + dir + " is empty" + HOW_TO_FORMAT);
      assertThat(dir).isEmptyDirectory();

      Files.delete(dir);
      assertThatThrownBy(() -> cluster.startNode(0))
          .isInstanceOf(StartRefusedException.class)
          .hasMessage("node n1 refuses to start: --data-dir " + dir + " does not exist" + HOW_TO_FORMAT);
      assertThat(dir).doesNotExist();
    }
  }

  /** Ratis, asked to recover a storage whose {@code current/} is empty, formats it without a word. */
  @Test
  void aRaftStorageWithoutItsMetadataIsRefusedNotFormatted() throws IOException {
    Path dir = root.resolve("n1");
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, FAST)) {
      cluster.stopNode(0);
      Path current = DataDir.storage(dir).resolve("current");
      deleteContents(current);

      assertThatThrownBy(() -> cluster.startNode(0))
          .isInstanceOf(StartRefusedException.class)
          .hasMessage(
              "node n1 refuses to start: the Raft storage in --data-dir " + dir + " is empty or damaged ("
                  + dir.relativize(DataDir.storage(dir).resolve(DataDir.RAFT_META)) + " is missing or empty)"
                  + HOW_TO_FORMAT);
      assertThat(current).isEmptyDirectory();
    }
  }

  @Test
  void aNewClusterIsNotFormattedOverANodesDataAndThatNodeRecoversIt() throws IOException {
    Path dir = root.resolve("n1");
    try (LocalCluster cluster = LocalCluster.start(1, 0, root, FAST)) {
      cluster.stopNode(0);
    }
    List<String> before = listTree(dir);

    assertThatThrownBy(() -> LocalCluster.start(1, 0, root, FAST))
        .isInstanceOf(StartRefusedException.class)
        .hasMessage(
            "node n1 refuses to start: --bootstrap formats a new node, but --data-dir " + dir + " is not empty"
                + " (it holds " + DataDir.storage(dir).getFileName() + "); a node with data recovers it when"
                + " started without --bootstrap, and a directory with data is never wiped");
    assertThat(listTree(dir)).isEqualTo(before);

    try (LocalCluster again = LocalCluster.recover(1, 0, root, FAST)) {
      assertThat(again.node(0)).isPresent();
    }
  }

  @Test
  void joiningFormatsOnlyAnEmptyDirectory() throws IOException {
    Peer self = new Peer("n1", "127.0.0.1", LocalCluster.freePortPair());
    Path data = Files.createDirectories(root.resolve("n1"));
    Files.writeString(data.resolve("keep"), "data");
    NodeConfig join = NodeConfig.of("n1", List.of(self), data).withStartMode(NodeConfig.StartMode.JOIN);

    assertThatThrownBy(() -> CoreNode.start(join))
        .isInstanceOf(StartRefusedException.class)
        .hasMessageStartingWith("node n1 refuses to start: --join formats a new node, but --data-dir " + data
            + " is not empty (it holds keep)");
    assertThat(listTree(data)).containsExactly(data + "/", data.resolve("keep") + " 4");
  }

  private static void deleteContents(Path dir) throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        if (!p.equals(dir)) {
          Files.delete(p);
        }
      }
    }
  }

  /** {@return every file and directory under {@code dir}, with the size of each file} */
  private static List<String> listTree(Path dir) throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      List<String> tree = new java.util.ArrayList<>();
      for (Path p : paths.sorted().toList()) {
        tree.add(p + (Files.isRegularFile(p) ? " " + Files.size(p) : "/"));
      }
      return tree;
    }
  }
}
