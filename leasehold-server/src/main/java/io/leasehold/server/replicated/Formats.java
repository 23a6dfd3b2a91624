package io.leasehold.server.replicated;

/**
 * The versions of what a node writes to disk and to its peers, for upgrades (docs/operations.md,
 * "Upgrades"):
 *
 * <ul>
 *   <li>the <b>snapshot format</b>, in the header of every snapshot ({@link CoreState}: {@code LHSN}
 *       then the number; a backup's body is a snapshot): this build writes {@link #SNAPSHOT} and
 *       reads every format from 1 up to it;
 *   <li>the <b>log format</b>, in {@code Command.log_format} of every entry the leader appends
 *       (absent means 1, every entry written so far, so format 1 costs no byte): this build writes
 *       {@link #LOG} and reads every format up to it.
 * </ul>
 *
 * A node refuses data of a newer format with a message that says so: a newer snapshot when it
 * loads one (at start, or installed by the leader), a newer log entry before applying any of it
 * ({@link CoreState.NewerCommandException}, as for a command of an unknown kind).
 *
 * <p>Test hook: the system property {@value #SNAPSHOT_PROPERTY}, read when a node's state machine
 * is made, makes the nodes started afterwards in that JVM act as a build with that (higher)
 * snapshot format: they write it and read every format up to it. A value at or below this build's
 * own changes nothing. Only tests set it ({@code UpgradeTest}).
 */
public final class Formats {

  /**
   * The newest snapshot format this build writes: {@code SnapshotCodec.SNAPSHOT_FORMAT_ACL} once access
   * control is used, {@code SnapshotCodec.SNAPSHOT_FORMAT} until then (so a cluster without it can still
   * go back one version).
   */
  static final int SNAPSHOT = SnapshotCodec.SNAPSHOT_FORMAT_ACL;

  /** The log format this build writes (and 1: the format of every entry without the field). */
  public static final int LOG = 1;

  static final String SNAPSHOT_PROPERTY = "leasehold.test.snapshotFormat";

  private Formats() {}

  /** {@return the snapshot format a node made now writes (and the newest it reads)} */
  static int snapshotFormat() {
    return Math.max(SNAPSHOT, Integer.getInteger(SNAPSHOT_PROPERTY, SNAPSHOT));
  }

  /** {@return why a snapshot of {@code format} is refused by a node that reads up to {@code newest}} */
  static String snapshotRefused(int format, int newest) {
    if (format > newest) {
      return "snapshot format " + format + " is newer than this version of Leasehold reads (formats "
          + SnapshotCodec.SNAPSHOT_FORMAT_1 + " to " + newest + "): a newer version wrote it. Run this node"
          + " with that version or a later one; a node cannot go back to an older version once a newer"
          + " one has written its snapshot";
    }
    return "snapshot format " + format + " is not supported by this version (it reads formats "
        + SnapshotCodec.SNAPSHOT_FORMAT_1 + " to " + newest + "); upgrade the node";
  }

  /**
   * Refuses a log entry of a newer log format than {@code newest} before any of it is applied:
   * applying what this version may misread would make the replicas diverge.
   *
   * @param format the entry's {@code log_format}; 0 (absent) is format 1
   * @throws CoreState.NewerCommandException naming the entry and both formats
   */
  public static void refuseNewerLog(long index, int format, int newest) {
    if (format > newest) {
      throw new CoreState.NewerCommandException(
          "log entry " + index + " has log format " + format + ", newer than this version of Leasehold reads"
              + " (up to " + newest + "): a newer version wrote it. This node stops applying the log rather"
              + " than diverge from the nodes that read it; upgrade it to the version of the others, and it"
              + " catches up");
    }
  }
}
