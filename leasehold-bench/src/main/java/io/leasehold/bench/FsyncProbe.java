package io.leasehold.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import org.HdrHistogram.Histogram;

/**
 * The disk's fsync latency as a log-writing store sees it: appends of 4 KiB to a fresh file in the
 * directory where the clusters keep their data, each followed by {@link FileChannel#force(boolean)
 * force(false)} (fdatasync), timed together.
 */
final class FsyncProbe {

  private FsyncProbe() {}

  /** Measures in the temporary directory. */
  static Result run(int writes) {
    return run(writes, null);
  }

  /** Measures in a fresh directory under {@code parent} (the temporary directory when null). */
  static Result run(int writes, Path parent) {
    Histogram h = new Histogram(3);
    Path dir = null;
    Path file = null;
    try {
      dir = parent == null
          ? Files.createTempDirectory("leasehold-bench-fsync-")
          : Files.createTempDirectory(Files.createDirectories(parent), "fsync-");
      file = dir.resolve("probe.log");
      byte[] block = new byte[4096];
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        for (int i = 0; i < writes; i++) {
          ThreadLocalRandom.current().nextBytes(block);
          ByteBuffer buf = ByteBuffer.wrap(block);
          long t0 = System.nanoTime();
          while (buf.hasRemaining()) {
            ch.write(buf);
          }
          ch.force(false);
          h.recordValue(System.nanoTime() - t0);
        }
      }
      Result r = new Result("fsync", dir.getParent().toString()).param("writes", writes).param("block", "4 KiB");
      Latency.addTo(r, "fsync", "4 KiB write + fdatasync", h);
      return r;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot measure fsync in " + (parent == null ? "the temporary directory" : parent), e);
    } finally {
      try {
        if (file != null) {
          Files.deleteIfExists(file);
        }
        if (dir != null) {
          Files.deleteIfExists(dir);
        }
      } catch (IOException ignored) {
        // a leftover file in the temporary directory
      }
    }
  }
}
