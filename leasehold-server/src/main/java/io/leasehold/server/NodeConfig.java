package io.leasehold.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How to run one node of the core.
 *
 * @param self this node's id; must be one of {@code peers}
 * @param peers every node of the cluster (3 or 5 for fault tolerance; 1 for a toy)
 * @param dataDir where the node keeps its Raft log and snapshots; survives restarts
 * @param electionTimeout the shortest election timeout; the longest is twice it. Smaller means
 *     faster failover and more spurious elections on a loaded machine
 * @param snapshotEvery take a snapshot after this many log entries (and purge the log before it)
 * @param logSegmentBytes size of one log segment file; only whole segments are purged
 */
public record NodeConfig(
    String self,
    List<Peer> peers,
    Path dataDir,
    Duration electionTimeout,
    long snapshotEvery,
    long logSegmentBytes) {

  /** Default shortest election timeout: failover within about a second. */
  public static final Duration DEFAULT_ELECTION_TIMEOUT = Duration.ofMillis(300);

  /** Default snapshot interval, in log entries. */
  public static final long DEFAULT_SNAPSHOT_EVERY = 100_000;

  /** Default log segment size. */
  public static final long DEFAULT_LOG_SEGMENT_BYTES = 8L * 1024 * 1024;

  /**
   * Checks that the parts fit together.
   *
   * @param self this node's id
   * @param peers the cluster
   * @param dataDir the data directory
   * @param electionTimeout shortest election timeout
   * @param snapshotEvery entries between snapshots
   * @param logSegmentBytes log segment size
   */
  public NodeConfig {
    Objects.requireNonNull(self, "self");
    Objects.requireNonNull(dataDir, "dataDir");
    Objects.requireNonNull(electionTimeout, "electionTimeout");
    peers = List.copyOf(peers);
    if (peers.stream().noneMatch(p -> p.id().equals(self))) {
      throw new IllegalArgumentException(
          "node id " + self + " is not among the peers " + peers + "; --id must name one of them");
    }
    if (electionTimeout.compareTo(Duration.ofMillis(50)) < 0
        || electionTimeout.compareTo(Duration.ofSeconds(60)) > 0) {
      throw new IllegalArgumentException(
          "election timeout must be between 50 ms and 60 s; was " + electionTimeout.toMillis() + " ms");
    }
    if (snapshotEvery < 10) {
      throw new IllegalArgumentException("snapshot interval must be at least 10 entries; was " + snapshotEvery);
    }
    if (logSegmentBytes < 16 * 1024) {
      throw new IllegalArgumentException(
          "log segment size must be at least 16 KiB; was " + logSegmentBytes + " bytes");
    }
  }

  /**
   * A configuration with the defaults.
   *
   * @param self this node's id
   * @param peers the cluster
   * @param dataDir the data directory
   * @return the configuration
   */
  public static NodeConfig of(String self, List<Peer> peers, Path dataDir) {
    return new NodeConfig(
        self, peers, dataDir, DEFAULT_ELECTION_TIMEOUT, DEFAULT_SNAPSHOT_EVERY, DEFAULT_LOG_SEGMENT_BYTES);
  }

  /** {@return this node} */
  public Peer selfPeer() {
    return peers.stream().filter(p -> p.id().equals(self)).findFirst().orElseThrow();
  }

  /** {@return a copy with another election timeout} */
  public NodeConfig withElectionTimeout(Duration timeout) {
    return new NodeConfig(self, peers, dataDir, timeout, snapshotEvery, logSegmentBytes);
  }

  /** {@return a copy with other snapshot and segment sizes} */
  public NodeConfig withSnapshots(long every, long segmentBytes) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, every, segmentBytes);
  }
}
