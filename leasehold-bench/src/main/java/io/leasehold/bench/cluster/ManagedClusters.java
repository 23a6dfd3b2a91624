package io.leasehold.bench.cluster;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Starts the store clusters that {@code leasehold bench compare} measures, each as three child
 * processes on loopback. docs/bench-clusters.md describes their command lines, ports and settings.
 */
public final class ManagedClusters {

  /** The kinds {@link #start} takes. */
  public static final List<String> KINDS = List.of("core", "etcd", "zookeeper");

  private ManagedClusters() {}

  /**
   * Starts a 3-member cluster of {@code kind} and returns once it serves: every member runs as
   * leader or follower, a leader is elected, and a lease was acquired and released through {@link
   * ManagedCluster#backendUri()}. If that does not happen, every member that started is killed and
   * the exception shows the end of the members' logs, which stay in {@code workDir}.
   *
   * @param kind {@code core}, {@code etcd} or {@code zookeeper}
   * @param workDir where the members keep their data and logs: missing, empty, or left by an
   *     earlier managed cluster (then cleared); the cluster's {@code close()} empties it
   * @return the running cluster; the caller closes it
   * @throws IllegalArgumentException for another kind, or a {@code workDir} that holds other files
   * @throws IllegalStateException if a member cannot start (the etcd binary is missing, a port is
   *     taken, …) or the cluster does not serve within 120 s
   */
  public static ManagedCluster start(String kind, Path workDir) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(workDir, "workDir");
    return switch (kind) {
      case "core" -> CoreProcessCluster.start(workDir);
      case "etcd" -> EtcdProcessCluster.start(workDir);
      case "zookeeper" -> ZooKeeperProcessCluster.start(workDir);
      default -> throw new IllegalArgumentException(
          "kind must be one of " + String.join(", ", KINDS) + "; was '" + kind + "'");
    };
  }
}
