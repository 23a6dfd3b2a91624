package io.leasehold.bench;

import io.leasehold.bench.cluster.ManagedCluster;
import io.leasehold.bench.cluster.ManagedClusters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store a run measures: a backend URI given by the user, or a cluster the bench started (and
 * will stop, with its data, also on Ctrl-C).
 */
final class Target implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Target.class);

  private final String uri;
  private final ManagedCluster cluster;
  private final Path workDir;
  private final ClientFactory clients;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Thread hook;
  /** From launching the cluster's first member until it served a client write; null without one. */
  private Duration startedIn;

  private Target(String uri, ManagedCluster cluster, Path workDir) {
    this(uri, cluster, workDir, ClientFactory.forUri(uri));
  }

  private Target(String uri, ManagedCluster cluster, Path workDir, ClientFactory clients) {
    this.uri = uri;
    this.cluster = cluster;
    this.workDir = workDir;
    this.clients = clients;
    this.hook = cluster == null ? null : new Thread(this::stop, "bench-stop-cluster");
    if (hook != null) {
      Runtime.getRuntime().addShutdownHook(hook);
    }
  }

  /**
   * {@return a target on a store the user runs, after one backend opened and closed on it}
   *
   * @throws IllegalArgumentException if no backend accepts the URI
   */
  static Target ofUri(String uri) {
    ClientFactory.forUri(uri).open().close();
    return new Target(uri, null, null);
  }

  /** {@return a target on a cluster of {@code kind} started now under a fresh temporary directory} */
  static Target start(String kind) {
    return start(kind, null);
  }

  /**
   * {@return a target on a cluster of {@code kind} started now in a fresh directory under {@code
   * parent}} (under the temporary directory when null); closing it deletes that directory.
   */
  static Target start(String kind, Path parent) {
    return start(kind, parent, null);
  }

  /**
   * {@return a target on a cluster of {@code kind} started now in a fresh directory under {@code
   * parent}} (under the temporary directory when null), whose members' logs are copied into {@code
   * keepLogs} (unless null) when it stops; closing it deletes that directory.
   */
  static Target start(String kind, Path parent, Path keepLogs) {
    Path dir;
    try {
      dir = parent == null
          ? Files.createTempDirectory("leasehold-bench-" + kind + "-")
          : Files.createTempDirectory(Files.createDirectories(parent), kind + "-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make a directory for the " + kind + " cluster", e);
    }
    try {
      long t0 = System.nanoTime();
      ManagedCluster cluster = ManagedClusters.start(kind, dir);
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      if (keepLogs != null) {
        cluster.keepLogsIn(keepLogs);
      }
      Target target = new Target(cluster.backendUri(), cluster, dir);
      target.startedIn = took;
      return target;
    } catch (RuntimeException e) {
      deleteTree(dir);
      throw e;
    }
  }

  /** {@return a target whose clients {@code clients} opens, with no cluster (tests)} */
  static Target ofClients(String name, ClientFactory clients) {
    return new Target(name + ":", null, null, clients);
  }

  /** {@return a target on a cluster that someone else started and stops (tests)} */
  static Target ofCluster(ManagedCluster cluster) {
    return new Target(cluster.backendUri(), cluster, null);
  }

  /**
   * {@return how long the cluster took from launching its members until it served}: every member
   * leader or follower and a lease acquired and released through it ({@code ManagedClusters.start});
   * empty for a store the bench did not start
   */
  Optional<Duration> startedIn() {
    return Optional.ofNullable(startedIn);
  }

  String uri() {
    return uri;
  }

  Optional<ManagedCluster> cluster() {
    return Optional.ofNullable(cluster);
  }

  ClientFactory clients() {
    return clients;
  }

  /** {@return how result tables name the store} */
  String describe() {
    return cluster == null ? uri : cluster.name() + " (" + cluster.members().size() + " members started by the bench)";
  }

  /** {@return the store's short name: the cluster's, else the URI's scheme} */
  String storeName() {
    if (cluster != null) {
      return cluster.name();
    }
    int colon = uri.indexOf(':');
    return colon > 0 ? uri.substring(0, colon) : uri;
  }

  /** {@return the store's durability and timing settings, if the cluster describes them} */
  Optional<String> settings() {
    return cluster == null ? Optional.empty() : Optional.of(cluster.settings());
  }

  @Override
  public void close() {
    stop();
    if (hook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running or ran: it stopped the cluster
      }
    }
  }

  private void stop() {
    if (cluster == null || !closed.compareAndSet(false, true)) {
      return;
    }
    try {
      cluster.close();
    } catch (RuntimeException e) {
      log.warn("Stopping the {} cluster failed: {}", cluster.name(), e.toString());
    }
    if (workDir != null) {
      deleteTree(workDir);
    }
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      log.warn("Could not delete {}: {}", dir, e.toString());
    }
  }
}
