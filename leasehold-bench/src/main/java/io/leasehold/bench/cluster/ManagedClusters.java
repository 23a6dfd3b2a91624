package io.leasehold.bench.cluster;

import java.nio.file.Path;

/**
 * Placeholder so that the workloads compile before the real factory lands from the {@code
 * clusters} branch; the lead drops this commit at merge.
 */
public final class ManagedClusters {

  private ManagedClusters() {}

  /**
   * Starts a cluster of {@code kind} under {@code workDir}.
   *
   * @param kind {@code core}, {@code etcd} or {@code zookeeper}
   * @param workDir where the members keep their data
   * @return the running cluster
   */
  public static ManagedCluster start(String kind, Path workDir) {
    throw new UnsupportedOperationException(
        "managed clusters are not built yet (placeholder for the clusters branch); use --backend URI");
  }
}
