package io.leasehold.server;

import io.leasehold.server.replicated.CoreState;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A point-in-time copy of a core cluster's whole state, as {@code leasehold admin snapshot save}
 * writes it and {@code leasehold server --restore} reads it: a header (magic, format, the
 * revision, when it was taken, the body's length and SHA-256) and the body, which is the state
 * machine's own snapshot. A file that is truncated or altered is refused as a whole.
 *
 * @param revision the cluster's revision (the last fencing token issued) in the copy
 * @param takenAtMillis when it was taken (wall clock of the node that took it)
 * @param body the state machine's snapshot
 */
public record Backup(long revision, long takenAtMillis, byte[] body) {

  private static final byte[] MAGIC = "LHBACKUP".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  private static final int FORMAT = 1;
  /** Magic, format, revision, time, length, SHA-256. */
  private static final int HEADER_BYTES = MAGIC.length + 4 + 8 + 8 + 8 + 32;

  /** {@return the SHA-256 of the body, in hex} */
  public String sha256() {
    return HexFormat.of().formatHex(digest(body));
  }

  /**
   * Writes the copy to {@code file} atomically: to a temporary file beside it, forced to disk,
   * then renamed, so that {@code file} is either absent or whole.
   *
   * @throws IOException if it cannot be written
   */
  public void writeTo(Path file) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".partial");
    try {
      ByteArrayOutputStream header = new ByteArrayOutputStream(HEADER_BYTES);
      DataOutputStream out = new DataOutputStream(header);
      out.write(MAGIC);
      out.writeInt(FORMAT);
      out.writeLong(revision);
      out.writeLong(takenAtMillis);
      out.writeLong(body.length);
      out.write(digest(body));
      out.flush();
      try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
        channel.write(java.nio.ByteBuffer.wrap(header.toByteArray()));
        channel.write(java.nio.ByteBuffer.wrap(body));
        channel.force(true);
      }
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
        d.force(true);
      } catch (IOException notSupported) {
        // Some file systems cannot sync a directory; the file itself is on disk.
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * Reads and checks a copy.
   *
   * @throws IOException naming what is wrong: not a backup, a format this version cannot read,
   *     truncated, a checksum that does not match, or a state this version cannot load (a newer
   *     snapshot format)
   */
  public static Backup readFrom(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      DataInputStream data = new DataInputStream(in);
      byte[] magic = data.readNBytes(MAGIC.length);
      if (!Arrays.equals(magic, MAGIC)) {
        throw new IOException(file + " is not a Leasehold backup (it does not start with LHBACKUP)");
      }
      int format = data.readInt();
      if (format != FORMAT) {
        throw new IOException(file + " has backup format " + format + "; this version reads format " + FORMAT);
      }
      long revision = data.readLong();
      long takenAt = data.readLong();
      long length = data.readLong();
      byte[] sha = data.readNBytes(32);
      if (length < 0 || length > Integer.MAX_VALUE - 64) {
        throw new IOException(file + " is corrupt: its header gives a body of " + length + " bytes");
      }
      byte[] body = data.readNBytes((int) length);
      if (body.length != length || sha.length != 32) {
        throw new IOException(file + " is truncated: it holds " + body.length + " of the " + length + " bytes its header announces");
      }
      if (data.read() != -1) {
        throw new IOException(file + " is corrupt: it has bytes after the " + length + " its header announces");
      }
      if (!MessageDigest.isEqual(sha, digest(body))) {
        throw new IOException(file + " is corrupt: its SHA-256 does not match its contents");
      }
      refuseUnreadable(file, body);
      return new Backup(revision, takenAt, body);
    } catch (java.io.EOFException e) {
      throw new IOException(file + " is truncated: it ends inside its header", e);
    }
  }

  /**
   * Loads the body into a scratch state, as a restored node will: a snapshot this version cannot
   * read (a newer format, written by a newer version) must be refused here, before anything is
   * created, not by a node that has already formatted its data directory.
   */
  private static void refuseUnreadable(Path file, byte[] body) throws IOException {
    try {
      new CoreState().readSnapshot(new java.io.ByteArrayInputStream(body));
    } catch (IOException e) {
      throw new IOException(file + " cannot be restored by this version: " + e.getMessage(), e);
    }
  }

  private static byte[] digest(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}
