package io.leasehold.server.replicated;

import com.google.protobuf.InvalidProtocolBufferException;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.server.state.SessionRecord;
import io.leasehold.server.state.SnapshotBody;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.HashSet;
import java.util.Set;

/**
 * The snapshot file's form: a header (magic bytes, the format number), then the state's {@link
 * SnapshotBody} as one delimited message. It chooses the format a state is written in, and it
 * refuses, before anything is loaded, a file that is not a snapshot, one of a format this build
 * cannot read, and one whose parts do not fit together. {@link CoreState} turns the body into the
 * state and back.
 *
 * <p>Three formats are read: {@value #SNAPSHOT_FORMAT_1} (before cluster time and call holes),
 * {@value #SNAPSHOT_FORMAT} and {@value #SNAPSHOT_FORMAT_ACL} (with access control). While the
 * project has had no release, reading the older two protects no user's data, but they keep the
 * upgrade path tested ({@code UpgradeTest}); the decision to keep or reset them at the first
 * release is recorded in docs/compatibility.md.
 */
final class SnapshotCodec {

  /** Snapshot file header: magic bytes, then the format number. */
  private static final int SNAPSHOT_MAGIC = 0x4C48534E; // "LHSN"

  static final int SNAPSHOT_FORMAT = 2;

  /**
   * Format 2 with access control (the ACL, sessions' identities). Written only when the state has
   * any, so that a node of an older version refuses such a snapshot instead of dropping the ACL
   * (and with it every check); a state without them is still written as format 2.
   */
  static final int SNAPSHOT_FORMAT_ACL = 3;

  /** The format before cluster time and call holes; still read. */
  static final int SNAPSHOT_FORMAT_1 = 1;

  private SnapshotCodec() {}

  /** A snapshot read and checked: its format and its body. */
  record Read(int format, SnapshotBody body) {}

  /**
   * Writes {@code body} with its header.
   *
   * @param newestFormat the newest format this build writes ({@link Formats#snapshotFormat()})
   */
  static void write(SnapshotBody body, int newestFormat, OutputStream out) throws IOException {
    DataOutputStream data = new DataOutputStream(out);
    data.writeInt(SNAPSHOT_MAGIC);
    boolean accessControl = !body.getAclRoot().isEmpty() || body.getAclEntriesCount() > 0 || hasIdentifiedSessions(body);
    // A newer build (the test hook of Formats) writes its own format; this one writes format 3
    // only when access control is used, so a cluster without it can still go back a version.
    data.writeInt(newestFormat > SNAPSHOT_FORMAT_ACL ? newestFormat
        : accessControl ? SNAPSHOT_FORMAT_ACL : SNAPSHOT_FORMAT);
    body.writeDelimitedTo(data);
    data.flush();
  }

  /**
   * Reads and checks a snapshot.
   *
   * @param newestFormat the newest format this build reads
   * @throws IOException naming what is wrong, for anything but a whole, consistent snapshot of a
   *     format from {@value #SNAPSHOT_FORMAT_1} to {@code newestFormat}
   */
  static Read read(InputStream in, int newestFormat) throws IOException {
    DataInputStream data = new DataInputStream(in);
    int magic;
    int format;
    try {
      magic = data.readInt();
      format = data.readInt();
    } catch (java.io.EOFException e) {
      // Else the refusal would be an EOFException without a message (found by CoreStateFuzzTest).
      throw new IOException("snapshot is truncated: it ends inside its 8-byte header", e);
    }
    if (magic != SNAPSHOT_MAGIC) {
      throw new IOException("not a Leasehold snapshot (magic " + Integer.toHexString(magic) + ")");
    }
    if (format < SNAPSHOT_FORMAT_1 || format > newestFormat) {
      throw new IOException(Formats.snapshotRefused(format, newestFormat));
    }
    SnapshotBody body;
    try {
      body = SnapshotBody.parseDelimitedFrom(data);
    } catch (InvalidProtocolBufferException e) {
      throw new IOException("snapshot body is corrupt", e);
    }
    if (body == null) {
      throw new IOException("snapshot body is missing");
    }
    refuseInconsistent(body);
    return new Read(format, body);
  }

  private static boolean hasIdentifiedSessions(SnapshotBody body) {
    for (SessionRecord r : body.getSessionsList()) {
      if (!r.getIdentity().isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Refuses a snapshot whose parts do not fit together, before the state is touched: a refused
   * load must leave the state as it was, never half replaced (found by CoreStateFuzzTest).
   */
  private static void refuseInconsistent(SnapshotBody body) throws IOException {
    for (AclEntry entry : body.getAclEntriesList()) {
      String problem = AclTable.entryProblem(entry);
      if (problem != null) {
        throw new IOException("snapshot ACL entry for \"" + entry.getIdentity() + "\" is malformed: " + problem);
      }
    }
    if (body.getAclRoot().isEmpty() && body.getAclEntriesCount() > 0) {
      throw new IOException("snapshot has ACL entries but no root identity");
    }
    Set<Long> ids = new HashSet<>();
    body.getSessionsList().forEach(r -> ids.add(r.getId()));
    for (KeyValue kv : body.getKeysList()) {
      if (kv.getSessionId() != 0 && !ids.contains(kv.getSessionId())) {
        throw new IOException("snapshot key " + kv.getKey() + " names a missing session " + kv.getSessionId());
      }
    }
    for (KeyValue tombstone : body.getRevokedLeasesList()) {
      if (!ids.contains(tombstone.getSessionId()) || !tombstone.getKey().startsWith(CoreState.LEASE_PREFIX)) {
        throw new IOException(
            "snapshot tombstone " + tombstone.getKey() + " names a missing session " + tombstone.getSessionId()
                + " or is not a lease key");
      }
    }
  }
}
