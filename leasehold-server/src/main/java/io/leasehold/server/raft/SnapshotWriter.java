package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;
import java.io.BufferedOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the state machine's snapshots without holding up the applying thread.
 *
 * <p>Ratis asks for a snapshot ({@code takeSnapshot}) on the thread that applies the log, and
 * applies nothing until the call returns; serialising, syncing and checksumming a large state
 * there stalls every write and every keep-alive confirmation for as long (about 1.5 s at a million
 * leases). Here the applying thread only takes a {@linkplain CoreState#freeze() copy} of the state
 * (references, no serialising) and hands it to the writer's executor, which writes it to a
 * temporary file, syncs it and digests it as it goes. Ratis is told of a snapshot only once it is
 * on disk: until then {@link #take} answers {@value RaftLog#INVALID_LOG_INDEX} ("none taken"),
 * which Ratis neither logs nor acts on, and it asks again after its next applies. The call that
 * finds the write done publishes it — renames the file into place, saves its MD5 beside it — and
 * answers its index, so Ratis purges the log below it only then. Publishing on the applying thread
 * also keeps it apart from Ratis's clean-up of old snapshots, which runs there right after {@code
 * takeSnapshot} and would otherwise see a snapshot file whose MD5 is not written yet.
 *
 * <p>Not thread-safe: {@link #take} is called on the applying thread only; {@link #close} once,
 * when the state machine closes.
 */
final class SnapshotWriter implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(SnapshotWriter.class);

  /** How a temporary snapshot file's name ends; Ratis's own listing does not match it. */
  static final String TEMPORARY = ".tmp";

  private final String name;
  private final SimpleStateMachineStorage storage;
  private final Executor executor;
  private final Consumer<SingleFileSnapshotInfo> onPublished;
  private final LongSupplier installed;
  /** The write in progress or done but not published yet; null when there is none. */
  private volatile CompletableFuture<Written> writing;

  /** A copy of the state that can be written as a snapshot ({@link CoreState.Frozen#writeTo}). */
  @FunctionalInterface
  interface Copy {
    /**
     * Writes the copy.
     *
     * @param out where to (not closed)
     * @throws IOException if {@code out} fails
     */
    void writeTo(OutputStream out) throws IOException;
  }

  /** A snapshot on disk under its temporary name, with its digest. */
  record Written(TermIndex at, File temporary, MD5Hash md5, long bytes, long writeNanos) {}

  /**
   * @param name the node, for log lines
   * @param storage where snapshots live (its directory must be set)
   * @param executor runs the writes, one at a time
   * @param onPublished told of each snapshot once it is in place, on the thread that published it
   * @param installed the index of the latest snapshot loaded or installed from the leader: a write
   *     of an older state that finishes after such an install is dropped, not published
   */
  SnapshotWriter(
      String name,
      SimpleStateMachineStorage storage,
      Executor executor,
      Consumer<SingleFileSnapshotInfo> onPublished,
      LongSupplier installed) {
    this.name = name;
    this.storage = storage;
    this.executor = executor;
    this.onPublished = onPublished;
    this.installed = installed;
  }

  /**
   * Removes temporary snapshot files a write left when its node died in the middle of it: none is
   * ever read, and each is as large as the state.
   *
   * @throws IOException if the directory cannot be listed or a file removed
   */
  void removeLeftovers() throws IOException {
    File dir = storage.getSnapshotFile(0, 0).getParentFile();
    if (dir == null || !dir.isDirectory()) {
      return;
    }
    try (DirectoryStream<Path> leftovers = Files.newDirectoryStream(dir.toPath(), "snapshot.*" + TEMPORARY)) {
      for (Path p : leftovers) {
        log.info("{}: removing {}, a snapshot whose write did not finish", name, p.getFileName());
        Files.deleteIfExists(p);
      }
    }
  }

  /**
   * Ratis's {@code takeSnapshot}: publishes the write that finished, or starts one.
   *
   * @param last the last applied entry; {@code copy} must be of the state just after it
   * @param copy a supplier of the state's copy, called only when a write starts
   * @return the index of the snapshot now in place, or {@value RaftLog#INVALID_LOG_INDEX} if none
   *     is yet
   * @throws IOException if the last write failed (the next call starts another)
   */
  long take(TermIndex last, Supplier<Copy> copy) throws IOException {
    if (writing != null) {
      if (!writing.isDone()) {
        return RaftLog.INVALID_LOG_INDEX;
      }
      Written done;
      try {
        done = writing.join();
      } catch (CompletionException e) {
        throw new IOException(name + ": could not write a snapshot; the next one is tried after more applies", e.getCause());
      } finally {
        writing = null;
      }
      SingleFileSnapshotInfo published = publishUnlessOutdated(done);
      return published == null ? RaftLog.INVALID_LOG_INDEX : published.getIndex();
    }
    Copy state = copy.get();
    writing = CompletableFuture.supplyAsync(() -> write(last, state), executor);
    return RaftLog.INVALID_LOG_INDEX;
  }

  /**
   * Writes and publishes a snapshot at once, on the calling thread: for a node restored from a
   * backup, before Raft starts.
   *
   * @param at where the snapshot is in the log
   * @param state the state to write
   * @return the snapshot in place
   * @throws IOException if it cannot be written
   */
  SingleFileSnapshotInfo writeNow(TermIndex at, Copy state) throws IOException {
    try {
      return publish(write(at, state));
    } catch (java.io.UncheckedIOException e) {
      throw e.getCause();
    }
  }

  private Written write(TermIndex at, Copy state) {
    long startedNanos = System.nanoTime();
    File file = storage.getSnapshotFile(at.getTerm(), at.getIndex());
    File tmp = new File(file.getParentFile(), file.getName() + TEMPORARY);
    MessageDigest md5 = MD5FileUtil.newMD5();
    try (FileOutputStream fileOut = new FileOutputStream(tmp)) {
      OutputStream out = new BufferedOutputStream(new DigestOutputStream(fileOut, md5), 1 << 16);
      state.writeTo(out);
      out.flush();
      // On disk before Ratis may purge the log entries it replaces.
      fileOut.getFD().sync();
      return new Written(
          at, tmp, MD5Hash.newInstance(md5.digest()), fileOut.getChannel().size(), System.nanoTime() - startedNanos);
    } catch (IOException e) {
      try {
        Files.deleteIfExists(tmp.toPath());
      } catch (IOException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw new java.io.UncheckedIOException("writing " + tmp, e);
    }
  }

  /**
   * {@return the snapshot published, or null if a newer state came from the leader while it was
   * written} Ratis's snapshot index is past such a write's; it is dropped.
   */
  private SingleFileSnapshotInfo publishUnlessOutdated(Written done) throws IOException {
    if (done.at().getIndex() <= installed.getAsLong()) {
      Files.deleteIfExists(done.temporary().toPath());
      return null;
    }
    return publish(done);
  }

  /** Moves a written snapshot into place with its MD5 beside it; quick (a rename, a tiny file). */
  private SingleFileSnapshotInfo publish(Written done) throws IOException {
    File file = storage.getSnapshotFile(done.at().getTerm(), done.at().getIndex());
    Files.move(done.temporary().toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
    MD5FileUtil.saveMD5File(file, done.md5());
    try (FileChannel dir = FileChannel.open(file.getParentFile().toPath(), StandardOpenOption.READ)) {
      dir.force(true);
    }
    SingleFileSnapshotInfo info = new SingleFileSnapshotInfo(new FileInfo(file.toPath(), done.md5()), done.at());
    storage.updateLatestSnapshot(info);
    onPublished.accept(info);
    log.info(
        "{}: wrote snapshot {} ({} bytes in {} ms, off the applying thread)",
        name, file.getName(), done.bytes(), TimeUnit.NANOSECONDS.toMillis(done.writeNanos()));
    return info;
  }

  /**
   * Waits (up to {@code patience}) for a write in progress and publishes it: a node that stops
   * keeps the snapshot it was writing. Ratis has not been told of it, which is safe: on its next
   * start the node loads the newest snapshot in place and replays the log after it.
   *
   * @param patience how long to wait for the write
   */
  void finish(java.time.Duration patience) {
    CompletableFuture<Written> w = writing;
    writing = null;
    if (w == null) {
      return;
    }
    try {
      publishUnlessOutdated(w.get(patience.toMillis(), TimeUnit.MILLISECONDS));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException | IOException e) {
      log.warn("{}: the snapshot being written when the node stopped is not kept; the log has its entries", name, e);
    }
  }

  @Override
  public void close() {
    finish(java.time.Duration.ofSeconds(30));
  }
}
