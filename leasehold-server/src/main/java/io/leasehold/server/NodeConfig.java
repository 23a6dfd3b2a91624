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
 * @param electionTimeout the shortest election timeout; the longest is 1.2 × it, at least it + 50 ms. Smaller means
 *     faster failover and more spurious elections on a loaded machine
 * @param snapshotEvery take a snapshot after this many log entries (and purge the log before it)
 * @param logSegmentBytes size of one log segment file; only whole segments are purged
 * @param startMode whether the node formats a new data directory or recovers the one it has
 * @param tls TLS on every port of the node; null for plaintext (the default)
 * @param access the root identity (access control) and sessions per identity; null for the
 *     defaults ({@link AccessSettings#DEFAULT})
 * @param limits what one client may use of the node; null for {@link Limits#DEFAULTS}
 */
public record NodeConfig(
    String self,
    List<Peer> peers,
    Path dataDir,
    Duration electionTimeout,
    long snapshotEvery,
    long logSegmentBytes,
    StartMode startMode,
    TlsConfig tls,
    AccessSettings access,
    Limits limits) {

  /**
   * How a node treats its data directory when it starts. A node formats storage only when told
   * to: a node that lost its data and came back with an empty log could vote and count toward a
   * majority, so an acknowledged write (an acquire) could be lost and its revision, a fencing
   * token, issued again.
   */
  public enum StartMode {
    /**
     * The first start of a node of a new cluster: the data directory must be missing or empty,
     * and is formatted. A directory that holds anything is refused, never wiped.
     */
    BOOTSTRAP,
    /**
     * Every later start (the default): the node recovers the Raft storage in its data directory,
     * and refuses to start when the directory is missing, empty, or holds a storage without its
     * metadata.
     */
    RECOVER,
    /**
     * Reserved: a new node joining a running cluster (an empty directory, formatted, and the node
     * added to the cluster by a membership change while it catches up without a vote). Membership
     * changes are not built yet, so a node started this way is refused.
     */
    JOIN
  }

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
   * @param startMode format a new data directory or recover the one there
   * @param tls TLS on every port, or null for plaintext
   * @param access access settings, or null for the defaults
   * @param limits what one client may use of the node, or null for the defaults
   */
  public NodeConfig {
    access = access == null ? AccessSettings.DEFAULT : access;
    limits = limits == null ? Limits.DEFAULTS : limits;
    Objects.requireNonNull(self, "self");
    Objects.requireNonNull(startMode, "startMode");
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
   * A configuration with the default access settings and limits (the form before either existed).
   *
   * @param self this node's id
   * @param peers the cluster
   * @param dataDir the data directory
   * @param electionTimeout shortest election timeout
   * @param snapshotEvery entries between snapshots
   * @param logSegmentBytes log segment size
   * @param startMode format a new data directory or recover the one there
   * @param tls TLS on every port, or null for plaintext
   */
  public NodeConfig(
      String self,
      List<Peer> peers,
      Path dataDir,
      Duration electionTimeout,
      long snapshotEvery,
      long logSegmentBytes,
      StartMode startMode,
      TlsConfig tls) {
    this(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, startMode, tls, null, null);
  }

  /**
   * A plaintext configuration (the form before TLS existed).
   *
   * @param self this node's id
   * @param peers the cluster
   * @param dataDir the data directory
   * @param electionTimeout shortest election timeout
   * @param snapshotEvery entries between snapshots
   * @param logSegmentBytes log segment size
   * @param startMode format a new data directory or recover the one there
   */
  public NodeConfig(
      String self,
      List<Peer> peers,
      Path dataDir,
      Duration electionTimeout,
      long snapshotEvery,
      long logSegmentBytes,
      StartMode startMode) {
    this(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, startMode, null);
  }

  /**
   * A configuration with the defaults; the node recovers its data directory ({@link
   * StartMode#RECOVER}).
   *
   * @param self this node's id
   * @param peers the cluster
   * @param dataDir the data directory
   * @return the configuration
   */
  public static NodeConfig of(String self, List<Peer> peers, Path dataDir) {
    return new NodeConfig(
        self,
        peers,
        dataDir,
        DEFAULT_ELECTION_TIMEOUT,
        DEFAULT_SNAPSHOT_EVERY,
        DEFAULT_LOG_SEGMENT_BYTES,
        StartMode.RECOVER);
  }

  /** {@return this node} */
  public Peer selfPeer() {
    return peers.stream().filter(p -> p.id().equals(self)).findFirst().orElseThrow();
  }

  /** {@return a copy with another election timeout} */
  public NodeConfig withElectionTimeout(Duration timeout) {
    return new NodeConfig(self, peers, dataDir, timeout, snapshotEvery, logSegmentBytes, startMode, tls, access, limits);
  }

  /** {@return a copy with other snapshot and segment sizes} */
  public NodeConfig withSnapshots(long every, long segmentBytes) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, every, segmentBytes, startMode, tls, access, limits);
  }

  /** {@return a copy that starts the node in another way} */
  public NodeConfig withStartMode(StartMode mode) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, mode, tls, access, limits);
  }

  /** {@return a copy with TLS on every port from these files; null for plaintext} */
  public NodeConfig withTls(TlsConfig tlsConfig) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, startMode, tlsConfig, access, limits);
  }

  /** {@return a copy with these access settings; null for the defaults} */
  public NodeConfig withAccess(AccessSettings accessSettings) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, startMode, tls, accessSettings, limits);
  }

  /** {@return a copy with other limits on what one client may use} */
  public NodeConfig withLimits(Limits newLimits) {
    return new NodeConfig(self, peers, dataDir, electionTimeout, snapshotEvery, logSegmentBytes, startMode, tls, access, newLimits);
  }
}
