package io.leasehold.jmh;

import io.leasehold.server.replicated.CoreState;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The core's snapshot of a state holding {@code leases} leases (see {@link BenchmarkState}),
 * written and read with {@link CoreState#writeSnapshot} and {@link CoreState#readSnapshot}.
 *
 * <ul>
 *   <li>{@code writeToMemory} / {@code readFromMemory}: the serialisation alone, into and out of a
 *       byte array.</li>
 *   <li>{@code freeze}: what the applying thread does when Ratis asks for a snapshot: a copy
 *       of the state ({@link CoreState#freeze}, references under the state's lock). Applies wait
 *       for this part only.</li>
 *   <li>{@code takeSnapshot}: what the state machine's snapshot writer then does on its own
 *       thread: a temporary file through a buffered stream, an atomic rename, then the file's MD5
 *       (no fsync, which the writer adds). Before the writer existed, all of this ran on the
 *       applying thread.</li>
 *   <li>{@code loadSnapshot}: what a node does at start or after an installed snapshot: check the
 *       file's MD5, then read it into a fresh state.</li>
 * </ul>
 *
 * <p>The state machine checksums with Ratis's {@code MD5FileUtil}, which digests the file with
 * the JDK's MD5 and reads or writes a small {@code .md5} file beside it; here the digest is taken
 * the same way with the JDK directly, so that the jar need not carry Ratis. The small file is left
 * out (one tiny write or read).
 *
 * <p>The file lives under {@code java.io.tmpdir}; after the first write it is in the page cache,
 * so these figures are CPU cost, not disk speed. The snapshot's size is printed at setup.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class CoreStateSnapshotBenchmark {

  /** Leases held in the state. */
  @Param("100000")
  public int leases;

  private CoreState state;
  private byte[] snapshot;
  private Path dir;
  private File file;
  private byte[] saved;

  /**
   * Builds the state, writes one snapshot file, and prints its size.
   *
   * @throws IOException if the temporary directory cannot be written
   */
  @Setup(Level.Trial)
  public void build() throws IOException {
    state = new BenchmarkState(leases).state;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    state.writeSnapshot(out);
    snapshot = out.toByteArray();
    dir = Files.createTempDirectory("leasehold-jmh-snapshot");
    file = dir.resolve("snapshot.1_" + leases).toFile();
    saved = takeSnapshot();
    System.out.printf(
        "%nsnapshot of %,d leases (%,d sessions, %,d clients' dedup replies): %,d bytes (%.1f bytes"
            + " per lease)%n",
        leases,
        BenchmarkState.CLIENTS,
        BenchmarkState.CLIENTS,
        snapshot.length,
        (double) snapshot.length / leases);
  }

  /**
   * Removes the temporary directory.
   *
   * @throws IOException if it cannot be removed
   */
  @TearDown(Level.Trial)
  public void removeFiles() throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }

  /**
   * Serialises the state into memory.
   *
   * @return the snapshot's size
   * @throws IOException never (in-memory stream)
   */
  @Benchmark
  public int writeToMemory() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(snapshot.length + 64);
    state.writeSnapshot(out);
    return out.size();
  }

  /**
   * Copies the state for a snapshot, as the applying thread does.
   *
   * @return the copy
   */
  @Benchmark
  public CoreState.Frozen freeze() {
    return state.freeze();
  }

  /**
   * Reads the snapshot from memory into a fresh state.
   *
   * @return the state
   * @throws IOException never (the benchmark's own snapshot)
   */
  @Benchmark
  public CoreState readFromMemory() throws IOException {
    CoreState fresh = new CoreState();
    fresh.readSnapshot(new ByteArrayInputStream(snapshot));
    return fresh;
  }

  /**
   * Writes a snapshot file as the state machine does.
   *
   * @return the file's MD5
   * @throws IOException if the file cannot be written
   */
  @Benchmark
  public byte[] takeSnapshot() throws IOException {
    File tmp = new File(file.getParentFile(), file.getName() + ".tmp");
    try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(tmp.toPath()))) {
      state.writeSnapshot(out);
    }
    Files.move(tmp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
    return md5(file);
  }

  /**
   * Checks and loads the snapshot file as a starting node does.
   *
   * @return the state
   * @throws IOException if the file cannot be read or its checksum does not match
   */
  @Benchmark
  public CoreState loadSnapshot() throws IOException {
    if (!Arrays.equals(md5(file), saved)) {
      throw new IOException("snapshot " + file + " does not match its MD5");
    }
    CoreState fresh = new CoreState();
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file.toPath()))) {
      fresh.readSnapshot(in);
    }
    return fresh;
  }

  private static byte[] md5(File file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("MD5");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has MD5", e);
    }
    byte[] buffer = new byte[64 * 1024];
    try (InputStream in = new DigestInputStream(Files.newInputStream(file.toPath()), digest)) {
      while (in.read(buffer) != -1) {
        // the digest sees every byte read
      }
    }
    return digest.digest();
  }
}
