package io.leasehold.bench.cluster;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the three managed clusters share: members as child processes (the server itself, never a
 * wrapper shell, so that its CPU time and memory can be read), one log file per member, waiting
 * until the cluster serves, SIGKILL and restart, and a shutdown hook that kills the children if
 * the benchmark dies first.
 *
 * <p>Layout of the work directory: {@code <id>/} per member (its data, and its configuration where
 * the store reads one from a file), {@code <id>.log} per member (standard output and error, appended
 * across restarts), and a marker file that lets a later start clear what a crashed run left.
 */
abstract class ProcessCluster implements ManagedCluster {

  /**
   * Three JVMs or etcd members starting together: seconds on an idle machine, more than a minute
   * on two cores that a parallel build keeps busy.
   */
  static final Duration START_TIMEOUT = Duration.ofSeconds(120);

  /** A restarted member starts, replays its log and catches up with the leader. */
  static final Duration REJOIN_TIMEOUT = Duration.ofSeconds(90);

  /** How long a member may take to stop after SIGTERM: a leader's hand-over, then its shutdown. */
  static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);

  /** How long a SIGKILLed process may take to be reaped. */
  private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration POLL = Duration.ofMillis(100);
  private static final String MARKER = ".leasehold-bench-cluster";
  private static final int LOG_TAIL_LINES = 25;
  private static final String PROBE_LEASE = "leasehold-bench-ready";

  private static final Logger log = LoggerFactory.getLogger(ProcessCluster.class);

  /** One member: where it lives, and its process while it runs. */
  static final class Slot {
    final String id;
    final String endpoint;
    final Path dir;
    final Path log;
    volatile Process process;

    Slot(String id, String endpoint, Path dir, Path log) {
      this.id = id;
      this.endpoint = endpoint;
      this.dir = dir;
      this.log = log;
    }

    boolean running() {
      Process p = process;
      return p != null && p.isAlive();
    }
  }

  private final String name;
  private final Path workDir;
  private final List<Slot> slots = new ArrayList<>();
  private final Thread reaper;
  private boolean closed;
  /** Where {@link #close()} copies the members' logs; null keeps none. */
  private volatile Path keepLogs;

  /**
   * Claims {@code workDir} (see {@link #claim}) and lays out one slot per member.
   *
   * @param name the store's short name
   * @param workDir the work directory
   * @param ids the members' ids, in order
   * @param endpoints the members' client endpoints, {@code host:port}, in the same order
   */
  ProcessCluster(String name, Path workDir, List<String> ids, List<String> endpoints) {
    this.name = name;
    this.workDir = workDir.toAbsolutePath().normalize();
    claim(this.workDir);
    for (int i = 0; i < ids.size(); i++) {
      String id = ids.get(i);
      slots.add(new Slot(id, endpoints.get(i), this.workDir.resolve(id), this.workDir.resolve(id + ".log")));
    }
    reaper = new Thread(this::killAllNow, "leasehold-bench-" + name + "-reaper");
  }

  /**
   * Makes {@code workDir} an empty directory of ours. A directory with our marker is what an
   * earlier cluster left (the benchmark was killed before it could close it): cleared. Any other
   * non-empty directory is refused, so that a mistyped path never loses anyone's files.
   */
  private static void claim(Path workDir) {
    if (Files.exists(workDir) && !Files.isDirectory(workDir)) {
      throw new IllegalArgumentException("workDir must be a directory; " + workDir + " is a file");
    }
    try {
      if (Files.isDirectory(workDir)) {
        List<Path> entries;
        try (Stream<Path> list = Files.list(workDir)) {
          entries = list.toList();
        }
        if (!entries.isEmpty()) {
          if (!Files.exists(workDir.resolve(MARKER))) {
            throw new IllegalArgumentException(
                "workDir must be missing, empty, or left by an earlier managed cluster (it then holds"
                    + " the file " + MARKER + "); " + workDir + " holds " + entries.size()
                    + " other entries, e.g. " + entries.get(0).getFileName());
          }
          log.warn("clearing {}, which an earlier managed cluster left behind", workDir);
          deleteContents(workDir);
        }
      }
      Files.createDirectories(workDir);
      Files.writeString(workDir.resolve(MARKER), "a store cluster that leasehold-bench started; deleted on close\n");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare the work directory " + workDir, e);
    }
  }

  // ---- what each store says ----

  /** {@return the full command line of member {@code i}: the server binary first, no shell} */
  abstract List<String> command(int i);

  /** Writes what member {@code i} needs before its first start (configuration files). */
  void prepare(int i) throws IOException {}

  /**
   * {@return whether member {@code i} answers as leader or follower of a cluster that has a leader}
   * Must answer within a few seconds and never throw.
   */
  abstract boolean healthy(int i);

  /** Releases what the cluster's status queries hold (connections). */
  void closeClients() {}

  // ---- lifecycle ----

  /**
   * Starts every member and returns once each serves, a leader is elected and a lease can be
   * acquired through {@link #backendUri()}; on failure kills what started and rethrows.
   */
  final void startAll() {
    long began = System.nanoTime();
    Runtime.getRuntime().addShutdownHook(reaper);
    try {
      for (int i = 0; i < slots.size(); i++) {
        Files.createDirectories(slots.get(i).dir);
        prepare(i);
        launch(i);
      }
      await("every " + name + " member to serve", START_TIMEOUT, allMembers(), this::allHealthy);
      await("a " + name + " leader", START_TIMEOUT, allMembers(), () -> leader().isPresent());
      awaitWrite();
    } catch (IOException e) {
      abort();
      throw new UncheckedIOException("cannot start the " + name + " cluster in " + workDir, e);
    } catch (RuntimeException | Error e) {
      abort();
      throw e;
    }
    log.info(
        "{} cluster of {} serves after {} ms: {}; logs in {}; settings: {}",
        name, slots.size(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), backendUri(), workDir,
        settings());
  }

  private void abort() {
    killAllNow();
    removeReaper();
    closeClients();
    closed = true;
    // The logs stay for the post-mortem; the marker lets the next start clear them.
    log.warn("the {} cluster did not start; its logs stay in {}", name, workDir);
  }

  /** The write a client makes: the cluster serves once a lease can be acquired and released. */
  private void awaitWrite() {
    LeaseSettings settings =
        LeaseSettings.builder(PROBE_LEASE, "managed-cluster").ttl(Duration.ofSeconds(10)).build();
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    Throwable last = null;
    try (LeaseBackend backend = LeaseBackend.open(backendUri());
        Lease lease = backend.newLease(settings)) {
      while (System.nanoTime() < deadline) {
        try {
          if (lease.acquire().get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            lease.release().get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            return;
          }
          last = new IllegalStateException("acquire returned false on a fresh cluster");
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted while waiting for the " + name + " cluster", e);
        } catch (Exception e) {
          last = e;
        }
        failIfAnyExited(allMembers());
        pause("a write to the " + name + " cluster");
      }
    }
    throw new IllegalStateException(
        "the " + name + " cluster elected a leader but no lease could be acquired through "
            + backendUri() + " within " + START_TIMEOUT.toSeconds() + " s (last failure: " + last
            + ")" + tails(allMembers()),
        last);
  }

  private void launch(int i) throws IOException {
    Slot s = slots.get(i);
    List<String> command = command(i);
    Files.writeString(
        s.log,
        "---- leasehold-bench starts " + s.id + ": " + String.join(" ", command) + "\n",
        StandardCharsets.UTF_8,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    s.process =
        new ProcessBuilder(command)
            .directory(s.dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(s.log.toFile()))
            .start();
    log.debug("{} member {} started, pid {}", name, s.id, s.process.pid());
  }

  // ---- ManagedCluster ----

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final List<Member> members() {
    List<Member> members = new ArrayList<>();
    for (Slot s : slots) {
      Process p = s.process;
      members.add(
          new Member(s.id, s.endpoint, p != null && p.isAlive() ? Optional.of(p.toHandle()) : Optional.empty()));
    }
    return List.copyOf(members);
  }

  @Override
  public final synchronized void kill(int i) {
    checkOpen();
    Slot s = slot(i);
    Process p = s.process;
    if (p == null) {
      return;
    }
    p.destroyForcibly();
    try {
      if (!p.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException(
            name + " member " + s.id + " (pid " + p.pid() + ") still runs " + EXIT_TIMEOUT.toSeconds()
                + " s after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + name + " member " + s.id + " to die", e);
    }
    s.process = null;
    log.info("{} member {} killed (SIGKILL, pid {})", name, s.id, p.pid());
  }

  /**
   * SIGTERM, then waits up to {@link #STOP_TIMEOUT} for the process to end (a core leader hands
   * over first, bounded by the server); one that is still running is killed and reported.
   */
  @Override
  public final synchronized void stop(int i) {
    checkOpen();
    Slot s = slot(i);
    Process p = s.process;
    if (p == null) {
      return;
    }
    p.destroy(); // SIGTERM on Unix: the server's shutdown hook runs
    try {
      if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        p.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        s.process = null;
        throw new IllegalStateException(
            name + " member " + s.id + " (pid " + p.pid() + ") still ran " + STOP_TIMEOUT.toSeconds()
                + " s after SIGTERM; killed" + tails(List.of(s)));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + name + " member " + s.id + " to stop", e);
    }
    s.process = null;
    log.info("{} member {} stopped (SIGTERM, pid {}, exit code {})", name, s.id, p.pid(), p.exitValue());
  }

  @Override
  public final synchronized void restart(int i) {
    checkOpen();
    Slot s = slot(i);
    if (s.running()) {
      throw new IllegalStateException(
          name + " member " + s.id + " (index " + i + ") still runs; kill(" + i + ") it first");
    }
    long began = System.nanoTime();
    try {
      launch(i);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + name + " member " + s.id + " again", e);
    }
    await(name + " member " + s.id + " to rejoin", REJOIN_TIMEOUT, List.of(s), () -> healthy(i));
    log.info(
        "{} member {} restarted (pid {}) and rejoined after {} ms",
        name, s.id, s.process.pid(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
  }

  @Override
  public final synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (int i = 0; i < slots.size(); i++) {
      Slot s = slots.get(i);
      Process p = s.process;
      if (p != null) {
        p.destroyForcibly();
        try {
          p.waitFor(EXIT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          killAllNow();
          break;
        }
        s.process = null;
      }
    }
    closeClients();
    removeReaper();
    copyLogs();
    try {
      deleteContents(workDir);
    } catch (IOException e) {
      log.warn("could not delete everything in {}; the next start there clears it", workDir, e);
    }
    log.info("{} cluster closed, {} cleared", name, workDir);
  }

  // ---- helpers for the stores ----

  final Slot slot(int i) {
    if (i < 0 || i >= slots.size()) {
      throw new IllegalArgumentException(
          "member index must be between 0 and " + (slots.size() - 1) + "; was " + i);
    }
    return slots.get(i);
  }

  final int size() {
    return slots.size();
  }

  final Path workDir() {
    return workDir;
  }

  /** {@return whether member {@code i}'s process runs} */
  final boolean running(int i) {
    return slots.get(i).running();
  }

  private boolean allHealthy() {
    for (int i = 0; i < slots.size(); i++) {
      if (!healthy(i)) {
        return false;
      }
    }
    return true;
  }

  private List<Slot> allMembers() {
    return slots;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the " + name + " cluster is closed");
    }
  }

  /**
   * Polls {@code done} until it holds; fails at once, with the end of its log, when one of {@code
   * watched} exits, and after {@code timeout} with the end of every watched member's log.
   */
  private void await(String what, Duration timeout, List<Slot> watched, BooleanSupplier done) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!done.getAsBoolean()) {
      failIfAnyExited(watched);
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "timed out after " + timeout.toSeconds() + " s waiting for " + what + tails(watched));
      }
      pause(what);
    }
  }

  private void failIfAnyExited(List<Slot> watched) {
    for (Slot s : watched) {
      Process p = s.process;
      if (p != null && !p.isAlive()) {
        throw new IllegalStateException(
            name + " member " + s.id + " exited with code " + p.exitValue() + tails(List.of(s)));
      }
    }
  }

  private static void pause(String what) {
    try {
      // Polling a child process: there is no event to wait on.
      Thread.sleep(POLL.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + what, e);
    }
  }

  private String tails(List<Slot> members) {
    StringBuilder b = new StringBuilder();
    for (Slot s : members) {
      b.append("\n---- last lines of ").append(s.log).append(" ----\n").append(tail(s.log));
    }
    return b.toString();
  }

  /** {@return the last lines of {@code file}, read from its end, so a large log costs little} */
  static String tail(Path file) {
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
      long length = f.length();
      int size = (int) Math.min(length, 8192);
      byte[] bytes = new byte[size];
      f.seek(length - size);
      f.readFully(bytes);
      String text = new String(bytes, StandardCharsets.UTF_8);
      List<String> lines = text.stripTrailing().lines().toList();
      // A chunk from the middle of the file starts inside a line: drop that part-line.
      int from = Math.max(size < length ? 1 : 0, lines.size() - LOG_TAIL_LINES);
      return from >= lines.size() ? "(empty)" : String.join("\n", lines.subList(from, lines.size()));
    } catch (IOException e) {
      return "(cannot read " + file + ": " + e.getMessage() + ")";
    }
  }

  /** SIGKILL to every member, without waiting: for the shutdown hook and failed starts. */
  private void killAllNow() {
    for (Slot s : slots) {
      Process p = s.process;
      if (p != null) {
        p.destroyForcibly();
      }
    }
  }

  private void removeReaper() {
    try {
      Runtime.getRuntime().removeShutdownHook(reaper);
    } catch (IllegalStateException e) {
      // The JVM is shutting down: the hook runs, or ran, and kills the members.
    }
  }

  @Override
  public void keepLogsIn(Path dir) {
    keepLogs = Objects.requireNonNull(dir, "dir");
  }

  /** Copies every member's log into {@link #keepLogs}, if set; a failure is logged, not thrown. */
  private void copyLogs() {
    Path dir = keepLogs;
    if (dir == null) {
      return;
    }
    try {
      Files.createDirectories(dir);
      for (Slot s : slots) {
        if (Files.exists(s.log)) {
          Files.copy(s.log, dir.resolve(s.log.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
      log.info("{} cluster: members' logs kept in {}", name, dir);
    } catch (IOException e) {
      log.warn("could not keep the members' logs in {}: {}", dir, e.toString());
    }
  }

  private static void deleteContents(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return;
    }
    List<Path> paths;
    try (Stream<Path> walk = Files.walk(dir)) {
      paths = walk.filter(p -> !p.equals(dir)).sorted(Comparator.reverseOrder()).toList();
    }
    for (Path p : paths) {
      Files.deleteIfExists(p);
    }
  }
}
