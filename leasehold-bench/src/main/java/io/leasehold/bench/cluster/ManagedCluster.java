package io.leasehold.bench.cluster;

import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

/**
 * A store cluster the benchmark started itself, as child processes on loopback, so that it can
 * measure the servers (CPU, memory) and inject faults (kill the leader, restart a member).
 *
 * <p>Implementations: the consistent core (3 JVMs running {@code leasehold server}), etcd (3 members
 * of Debian's {@code etcd} binary) and ZooKeeper (3 JVMs running {@code QuorumPeerMain}), each with
 * its store's default durability (every write fsync'd). {@link #close()} kills every member and
 * deletes the data directories. Start one with {@link ManagedClusters#start}.
 *
 * <p>Member indexes run from 0 to {@code members().size() - 1}; another index is an {@link
 * IllegalArgumentException}. Implementations are thread-safe.
 */
public interface ManagedCluster extends AutoCloseable {

  /** {@return the store's short name: {@code core}, {@code etcd} or {@code zookeeper}} */
  String name();

  /** {@return the backend URI that reaches every member, for {@code LeaseBackend.open}} */
  String backendUri();

  /**
   * {@return the settings that shape the store's latency and failover, in one line for the
   * benchmark report: processes and heap, durability (fsync), heartbeat or tick, election or
   * session timeouts, and the options in {@link #backendUri()}}
   */
  String settings();

  /** {@return the members, in a fixed order; index {@code i} is member {@code i} everywhere} */
  List<Member> members();

  /**
   * {@return the index of the member that leads now, asked of the members themselves, or empty
   * when none answers as leader}
   */
  Optional<Integer> leader();

  /**
   * {@return how many leases the store holds now, all clients' together, as the store itself
   * counts them (not what any client believes), or empty when no member could tell} Cheap enough
   * to ask a few times a second while 100,000 leases expire: the core's {@code Status} counts, a
   * count-only range over etcd's lease keys, ZooKeeper's count of ephemeral nodes ({@code mntr} on
   * the leader). The default says nothing.
   */
  default OptionalLong heldLeases() {
    return OptionalLong.empty();
  }

  /**
   * Kills member {@code i} with SIGKILL and waits for its process to end; nothing happens if it
   * does not run.
   */
  void kill(int i);

  /**
   * Starts member {@code i} again, with the same command on its data directory, and returns once
   * it has rejoined: it serves as leader or follower of a cluster that has a leader. The other
   * members' majority must be reachable for that.
   *
   * @throws IllegalStateException if member {@code i} still runs, exits while starting, or does
   *     not rejoin in time (the message shows the end of its log)
   */
  void restart(int i);

  /**
   * Stops member {@code i} the way an operator does, with SIGTERM (a core node that leads hands
   * its leadership to a caught-up peer first), and waits for its process to end; nothing happens
   * if it does not run. Start it again with {@link #restart}. The default cannot.
   *
   * @throws UnsupportedOperationException if this cluster cannot
   * @throws IllegalStateException if the member does not exit in time (it is then killed)
   */
  default void stop(int i) {
    throw new UnsupportedOperationException("the " + name() + " cluster cannot stop a member with SIGTERM");
  }

  /**
   * {@return the last log index member {@code i} applied, asked of the member itself, or empty
   * when it does not answer or the store does not tell} With {@link #leader()}, it tells when a
   * restarted member has caught up. The default says nothing.
   */
  default OptionalLong appliedIndex(int i) {
    return OptionalLong.empty();
  }

  /** {@return whether {@link #appliedIndex} tells anything: then {@link #awaitCaughtUp} can be used} */
  default boolean tellsAppliedIndex() {
    return false;
  }

  /**
   * Waits until member {@code i} has applied what the leader had applied when the wait began.
   * The leader's index is read once, first: under writes it moves on, and a member compared with
   * the leader's index of the moment (read after the member's) would seem behind for ever. A
   * member or leader that does not answer is asked again, never taken for caught up. Only for
   * clusters that {@linkplain #tellsAppliedIndex tell their applied index}.
   *
   * @param deadline System.nanoTime() after which it stops waiting
   * @return whether the member caught up before the deadline
   */
  default boolean awaitCaughtUp(int i, long deadline) throws InterruptedException {
    OptionalLong target = OptionalLong.empty();
    while (target.isEmpty()) {
      Optional<Integer> leader = leader();
      if (leader.isPresent()) {
        target = appliedIndex(leader.get());
      }
      if (target.isEmpty()) {
        if (System.nanoTime() - deadline > 0) {
          return false;
        }
        TimeUnit.MILLISECONDS.sleep(CATCH_UP_POLL_MILLIS);
      }
    }
    while (true) {
      OptionalLong applied = appliedIndex(i);
      if (applied.isPresent() && applied.getAsLong() >= target.getAsLong()) {
        return true;
      }
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      TimeUnit.MILLISECONDS.sleep(CATCH_UP_POLL_MILLIS);
    }
  }

  /** How often {@link #awaitCaughtUp} asks. */
  long CATCH_UP_POLL_MILLIS = 50;

  /**
   * Has {@link #close()} copy the members' logs ({@code <id>.log}) into {@code dir} before it
   * deletes the data directories: the elections, hand-overs and errors behind a run's figures. The
   * default keeps nothing.
   *
   * @param dir where the logs go (created if missing; files of the same names are replaced)
   */
  default void keepLogsIn(java.nio.file.Path dir) {}

  /** Kills every member and deletes the data directories (after copying the logs, if asked). */
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
