package io.leasehold.bench.cluster;

import java.util.List;
import java.util.Optional;

/**
 * A store cluster the benchmark started itself, as child processes on loopback, so that it can
 * measure the servers (CPU, memory) and inject faults (kill the leader, restart a member).
 *
 * <p>Implementations: the consistent core (3 JVMs running {@code leasehold server}), etcd (3 members
 * of Debian's {@code etcd} binary) and ZooKeeper (3 JVMs running {@code QuorumPeerMain}), each with
 * its store's default durability (every write fsync'd). {@link #close()} kills every member and
 * deletes the data directories.
 */
public interface ManagedCluster extends AutoCloseable {

  /** {@return the store's short name: {@code core}, {@code etcd} or {@code zookeeper}} */
  String name();

  /** {@return the backend URI that reaches every member, for {@code BackendRegistry}} */
  String backendUri();

  /** {@return the members, in a fixed order; index {@code i} is member {@code i} everywhere} */
  List<Member> members();

  /**
   * {@return the index of the member that leads now, asked of the members themselves, or empty
   * when none answers as leader}
   */
  Optional<Integer> leader();

  /** Kills member {@code i} with SIGKILL and waits for its process to end. */
  void kill(int i);

  /** Starts member {@code i} again on its data directory; returns once its process runs. */
  void restart(int i);

  /** Kills every member and deletes the data directories. */
  @Override
  void close();

  /**
   * One member of the cluster.
   *
   * @param id the member's id in the store's own configuration
   * @param endpoint {@code host:port} where clients connect
   * @param process the running process, or empty while it is killed
   */
  record Member(String id, String endpoint, Optional<ProcessHandle> process) {}
}
