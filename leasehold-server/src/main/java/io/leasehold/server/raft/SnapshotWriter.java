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
 * temporary file, syncs it and digests it as it goes, then publishes it: renames the file into
 * place and saves its MD5 beside it. Until then {@link #take} answers {@value
 * RaftLog#INVALID_LOG_INDEX} ("none taken"), which Ratis neither logs nor acts on; the first call
 * after the publication answers its index, and Ratis purges the log below it only then.
 *
 * <p>The writer's thread publishes, not the next call from Ratis: Ratis asks only after it applies
 * an entry, so a snapshot whose write finished after a cluster's last write would otherwise stay
 * under its temporary name until the next one — on an idle node, for good, and removed as a
 * leftover at its next start. Ratis's clean-up of old snapshots runs on the applying thread right
 * after {@code takeSnapshot}; {@link SnapshotStorage} makes it wait for a publication in progress,
 * so it never sees a snapshot file whose MD5 is not written yet.
 *
 * <p>{@link #take} is called on the applying thread only; {@link #close} once, when the state
 * machine closes, perhaps on another thread: the two hold this object's lock to hand the write in
 * progress over (never while a write runs or is waited for).
 */
final class SnapshotWriter implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(SnapshotWriter.class);

  /** How a temporary snapshot file's name ends; Ratis's own listing does not match it. */
  static final String TEMPORARY = ".tmp";

  private final String name;
  private final SnapshotStorage storage;
  private final Executor executor;
  private final Consumer<SingleFileSnapshotInfo> onPublished;
  private final LongSupplier installed;
  /**
   * The write in progress, or done and not yet answered to Ratis: completes with the snapshot put
   * in place, or null if it was dropped; null when there is none.
   */
  private CompletableFuture<SingleFileSnapshotInfo> writing;
  /**
   * Set by {@link #finish}: no write starts after it. Ratis closes the state machine on a thread
   * of its own; a {@link #take} racing it would start a write on an executor being shut down.
   */
  private boolean closed;

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
   * @param storage where snapshots live (its directory must be set); its lock keeps publications
   *     and Ratis's clean-up apart
   * @param executor runs the writes, one at a time
   * @param onPublished told of each snapshot once it is in place, on the thread that published it
   * @param installed the index of the latest snapshot loaded or installed from the leader: a write
   *     of an older state that finishes after such an install is dropped, not published
   */
  SnapshotWriter(
      String name,
      SnapshotStorage storage,
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
   * Ratis's {@code takeSnapshot}: answers the snapshot the last write put in place, or starts a
   * write.
   *
   * @param last the last applied entry; {@code copy} must be of the state just after it
   * @param copy a supplier of the state's copy, called only when a write starts
   * @return the index of the snapshot put in place since the last call, or {@value
   *     RaftLog#INVALID_LOG_INDEX} if none was
   * @throws IOException if the last write failed (the next call starts another)
   */
  synchronized long take(TermIndex last, Supplier<Copy> copy) throws IOException {
    if (closed) {
      return RaftLog.INVALID_LOG_INDEX;
    }
    CompletableFuture<SingleFileSnapshotInfo> w = writing;
    if (w != null) {
      if (!w.isDone()) {
        return RaftLog.INVALID_LOG_INDEX;
      }
      writing = null;
      SingleFileSnapshotInfo published;
      try {
        published = w.join();
      } catch (CompletionException e) {
        Throwable cause = e.getCause() instanceof java.io.UncheckedIOException u ? u.getCause() : e.getCause();
        throw new IOException(name + ": could not write a snapshot; the next one is tried after more applies", cause);
      }
      return published == null ? RaftLog.INVALID_LOG_INDEX : published.getIndex();
    }
    Copy state = copy.get();
    writing = CompletableFuture.supplyAsync(() -> publishUnlessOutdated(write(last, state)), executor);
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
   * written} Ratis's snapshot index is past such a write's; it is dropped. An install that lands
   * between the check and the publish is harmless: the older file is put in place beside the
   * newer one, and neither Ratis's latest snapshot nor this node's ever moves back to a lower
   * index (both keep the higher), so the clean-up removes the older file later.
   */
  private SingleFileSnapshotInfo publishUnlessOutdated(Written done) {
    try {
      if (done.at().getIndex() <= installed.getAsLong()) {
        Files.deleteIfExists(done.temporary().toPath());
        return null;
      }
      return publish(done);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("publishing " + done.temporary(), e);
    }
  }

  /**
   * Moves a written snapshot into place with its MD5 beside it, makes the rename durable, and only
   * then names it the latest (after which Ratis may purge the log it replaces).
   */
  private SingleFileSnapshotInfo publish(Written done) throws IOException {
    File file = storage.getSnapshotFile(done.at().getTerm(), done.at().getIndex());
    // The lock covers only the rename and the MD5 file, which the clean-up must see together; the
    // directory sync after it may take a disk's time and holds up nothing else.
    synchronized (storage.publishing()) {
      Files.move(done.temporary().toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
      MD5FileUtil.saveMD5File(file, done.md5());
    }
    try (FileChannel dir = FileChannel.open(file.getParentFile().toPath(), StandardOpenOption.READ)) {
      dir.force(true);
    }
    // Only now: FileInfo reads the file's size when made, and Ratis sends a follower that many
    // bytes of it when it installs the snapshot there.
    SingleFileSnapshotInfo info = new SingleFileSnapshotInfo(new FileInfo(file.toPath(), done.md5()), done.at());
    storage.updateLatestSnapshot(info);
    onPublished.accept(info);
    log.info(
        "{}: wrote snapshot {} ({} bytes in {} ms, off the applying thread)",
        name, file.getName(), done.bytes(), TimeUnit.NANOSECONDS.toMillis(done.writeNanos()));
    return info;
  }

  /**
   * Waits (up to {@code patience}) for a write in progress, which publishes it: a node that stops
   * keeps the snapshot it was writing. Ratis has not been told of it, which is safe: on its next
   * start the node loads the newest snapshot in place and replays the log after it.
   *
   * @param patience how long to wait for the write
   */
  void finish(java.time.Duration patience) {
    CompletableFuture<SingleFileSnapshotInfo> w;
    synchronized (this) {
      closed = true;
      w = writing;
      writing = null;
    }
    if (w == null) {
      return;
    }
    try {
      w.get(patience.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      log.warn("{}: the snapshot being written when the node stopped is not kept; the log has its entries", name, e);
    }
  }

  @Override
  public void close() {
    finish(java.time.Duration.ofSeconds(30));
  }
}
