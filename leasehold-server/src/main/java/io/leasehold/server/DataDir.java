package io.leasehold.server;

import io.leasehold.server.admin.MembershipChanges;

import io.leasehold.server.NodeConfig.StartMode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Decides, before anything is written, whether a node formats its data directory or recovers it,
 * and refuses the combinations that would lose data.
 *
 * <p>Ratis itself must not decide this: asked to recover, it formats a directory without the
 * group's storage, and a storage whose {@code current/} directory is empty, without a word. A
 * node that lost its disk would then come back with an empty log and a vote, and a majority made
 * of it and a node that missed the latest writes could elect a leader without them: an
 * acknowledged acquire lost, and its revision (a fencing token) issued again.
 */
public final class DataDir {

  /** Ratis keeps the term and the vote here; without it a storage is empty or damaged. */
  static final String RAFT_META = "current/raft-meta";

  /** Names the flags of {@code leasehold server} in the messages: that is where they are set. */
  private static final String HOW_TO_FORMAT =
      "a node formats its data only on its first start in a new cluster, with --bootstrap; a node"
          + " that lost its data must not rejoin with an empty log, because it would vote, and"
          + " acknowledged leases could be lost and fencing tokens issued again";

  private DataDir() {}

  /** {@return the directory in which Ratis keeps the one group's log, metadata and snapshots} */
  public static Path storage(Path dataDir) {
    return dataDir.resolve(CoreNode.GROUP_ID.getUuid().toString());
  }

  /**
   * Checks the data directory against the node's start mode; changes nothing.
   *
   * @param config the node
   * @return true to format a new storage, false to recover the one there
   * @throws StartRefusedException if starting so would format over data, or start a node that
   *     lost its data as if it had none
   */
  static boolean checkFormat(NodeConfig config) {
    Path dir = config.dataDir();
    String node = "node " + config.self() + " refuses to start: ";
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new StartRefusedException(node + "--data-dir " + dir + " is not a directory");
    }
    StartMode mode = config.startMode();
    if (mode == StartMode.BOOTSTRAP || mode == StartMode.JOIN) {
      // A joining node formats too: it has no vote until the cluster adds it, and then it is
      // sent the whole state before it counts (MembershipChanges).
      String flag = mode == StartMode.JOIN ? "--join" : "--bootstrap";
      // Named by what matters most: the Raft storage if there is one, else any entry.
      Optional<Path> something = Files.isDirectory(storage(dir)) ? Optional.of(storage(dir)) : firstEntry(dir);
      if (something.isPresent()) {
        throw new StartRefusedException(
            node + flag + " formats a new node, but --data-dir " + dir + " is not empty (it holds "
                + something.get().getFileName() + "); a node with data recovers it when started"
                + " without " + flag + ", and a directory with data is never wiped");
      }
      return true;
    }
    if (!Files.isDirectory(dir)) {
      throw new StartRefusedException(node + "--data-dir " + dir + " does not exist; " + HOW_TO_FORMAT);
    }
    Path storage = storage(dir);
    if (!Files.isDirectory(storage)) {
      throw new StartRefusedException(
          node + "--data-dir " + dir + (firstEntry(dir).isEmpty() ? " is empty" : " holds no Raft storage")
              + "; " + HOW_TO_FORMAT);
    }
    Path meta = storage.resolve(RAFT_META);
    try {
      if (!Files.isRegularFile(meta) || Files.size(meta) == 0) {
        throw new StartRefusedException(
            node + "the Raft storage in --data-dir " + dir + " is empty or damaged (" + dir.relativize(meta)
                + " is missing or empty); " + HOW_TO_FORMAT);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + meta + ": " + e.getMessage(), e);
    }
    return false;
  }

  /** Records which node a data directory belongs to, and whether it was started with TLS. */
  static final String OWNER_FILE = "node.properties";

  /**
   * Refuses to recover a data directory that belongs to another node, or that was started with
   * TLS and is now started without; changes nothing. A directory from before the record is taken
   * as this node's ({@link #recordOwner} then writes it).
   *
   * <p>Why: a node started on another node's directory ({@code --id n2} on n1's data) would start
   * without a word, vote with n1's log as a second n1, and answer for a membership it does not
   * have; one started without TLS on a cluster that has it would serve every client as {@code
   * anonymous}.
   *
   * @param config the node, recovering (not formatting) its directory
   * @throws StartRefusedException naming the flag that differs and what to do instead
   */
  static void checkOwner(NodeConfig config) {
    Path record = config.dataDir().resolve(OWNER_FILE);
    if (!Files.isRegularFile(record)) {
      return;
    }
    java.util.Properties owner = new java.util.Properties();
    try (var in = Files.newBufferedReader(record)) {
      owner.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + record + ": " + e.getMessage(), e);
    }
    String node = "node " + config.self() + " refuses to start: ";
    String id = owner.getProperty("node", "");
    if (!id.equals(config.self())) {
      throw new StartRefusedException(
          node + "--data-dir " + config.dataDir() + " belongs to node " + id + " (" + OWNER_FILE + "), not to --id "
              + config.self() + ": start node " + id + " with it, and give " + config.self() + " its own directory (a node"
              + " that lost its data comes back as a new node: start it with --join and run leasehold admin replace-node)");
    }
    if (Boolean.parseBoolean(owner.getProperty("tls", "false")) && config.tls() == null) {
      throw new StartRefusedException(
          node + "--data-dir " + config.dataDir() + " belongs to a node started with TLS (" + OWNER_FILE + "), and this"
              + " start has none: give --tls-cert, --tls-key and --tls-ca (leasehold dev: --tls; without TLS every client would be anonymous"
              + " and the cluster's access control could not tell them apart)");
    }
  }

  /**
   * Writes (or brings up to date) the record of the node a data directory belongs to: on its
   * format, on the first start after the record existed, and when a node that ran without TLS
   * starts with it.
   */
  static void recordOwner(NodeConfig config) {
    Path record = config.dataDir().resolve(OWNER_FILE);
    String text = "# The node this data directory belongs to; checked at every start (docs/operations.md).\n"
        + "node=" + config.self() + "\n"
        + "tls=" + (config.tls() != null) + "\n";
    try {
      if (!Files.isRegularFile(record) || !Files.readString(record).equals(text)) {
        Path tmp = config.dataDir().resolve(OWNER_FILE + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, record, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + record + ": " + e.getMessage(), e);
    }
  }

  /** Marks a data directory formatted by {@code --join}: the node came into a running cluster. */
  static final String JOINED_FILE = "joined";

  /**
   * {@return whether the node joined a running cluster (started with {@code --join} now, or
   * before: then the data directory says so)} Such a node has no root-identity file even where
   * the cluster has access control on, so it must learn from its state or its peers whether it
   * has; {@code --join} writes the mark, so that a restart before the state holds the ACL knows.
   */
  static boolean joined(NodeConfig config) {
    Path mark = config.dataDir().resolve(JOINED_FILE);
    if (config.startMode() == StartMode.JOIN) {
      try {
        Files.writeString(mark, "this node was formatted by --join; it serves nobody until it knows the cluster's access control\n");
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write " + mark + ": " + e.getMessage(), e);
      }
      return true;
    }
    return Files.exists(mark);
  }

  /** {@return an entry of {@code dir}, if it exists and holds any} */
  private static Optional<Path> firstEntry(Path dir) {
    if (!Files.isDirectory(dir)) {
      return Optional.empty();
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      var it = entries.iterator();
      return it.hasNext() ? Optional.of(it.next()) : Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read --data-dir " + dir + ": " + e.getMessage(), e);
    }
  }
}
