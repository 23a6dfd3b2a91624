package io.leasehold.server.raft;

import io.leasehold.server.Backup;
import io.leasehold.server.admin.LeadershipTransfer;
import io.leasehold.server.edge.WatchHub;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.replicated.Formats;

import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.server.state.BatchReply;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Heard;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotCopy;
import java.io.BufferedInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.exceptions.StateMachineException;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.SnapshotInfo;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The core's state machine on Ratis: applies log entries to {@link CoreState}, tells the {@link
 * SessionKeeper} about sessions, hands events to the {@link WatchHub}, answers linearizable reads
 * and keep-alives, and writes and loads snapshots. On the leader it stamps every entry it appends
 * with cluster time (see {@link ClusterClock}).
 */
public final class LeaseStateMachine extends BaseStateMachine {

  private static final Logger log = LoggerFactory.getLogger(LeaseStateMachine.class);

  private final CoreState state = new CoreState();
  private final SessionKeeper keeper;
  private final WatchHub watches;
  private final ClusterClock clock;
  private final Function<Command, CompletableFuture<Reply>> writeLocally;
  private final SnapshotStorage storage = new SnapshotStorage();
  /** Writes snapshots, one at a time, off the applying thread. */
  private final java.util.concurrent.ExecutorService snapshotThread =
      java.util.concurrent.Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "leasehold-snapshot-writer");
            t.setDaemon(true);
            return t;
          });
  private SnapshotWriter snapshots;
  private volatile RaftServer.Division division;
  private volatile long loadedSnapshotIndex = -1;
  private final CompletableFuture<Void> closed = new CompletableFuture<>();

  private final Runnable onLeaderReady;
  /** Told when this node applies the first entry of a newer term; on Ratis's thread, so it must not block. */
  private volatile Runnable onLeaderServing = () -> {};
  /** The newest term of an entry applied here (written by the applying thread, read anywhere). */
  private volatile long appliedTerm = -1;

  /** Why this node answers no reads now (see {@link PeerSettings}); null while it serves them. */
  private volatile String readsRefused;
  /** How often a keep-alive writes a Heard entry before it gives up (each needs a new marking). */
  private static final int MAX_HEARD_ROUNDS = 3;

  /**
   * @param clock cluster time, which this state machine stamps entries with and moves on
   * @param onLeaderReady called when this node leads and has committed an entry of its term
   * @param writeLocally appends a command through the local Raft server only (never forwarded)
   */
  public LeaseStateMachine(
      SessionKeeper keeper,
      WatchHub watches,
      ClusterClock clock,
      Runnable onLeaderReady,
      Function<Command, CompletableFuture<Reply>> writeLocally) {
    this.keeper = keeper;
    this.watches = watches;
    this.clock = clock;
    this.onLeaderReady = onLeaderReady;
    this.writeLocally = writeLocally;
  }

  /** {@return cluster time as this node knows it} */
  ClusterClock clock() {
    return clock;
  }

  /** {@return the log index of the last snapshot loaded (at start, or installed from the leader)} */
  public long loadedSnapshotIndex() {
    return loadedSnapshotIndex;
  }

  public CoreState state() {
    return state;
  }

  @Override
  public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage)
      throws IOException {
    super.initialize(server, groupId, raftStorage);
    division = server.getDivision(groupId);
    storage.init(raftStorage);
    snapshots =
        new SnapshotWriter(
            String.valueOf(getId()), storage, snapshotThread, this::published, () -> loadedSnapshotIndex);
    snapshots.removeLeftovers();
    if (restore != null) {
      if (storage.loadLatestSnapshot() != null) {
        throw new IOException("a node with a snapshot cannot be restored from a backup");
      }
      writeRestoredSnapshot();
    }
    getLifeCycle().startAndTransition(this::loadLatestSnapshot, IOException.class);
  }

  /**
   * Ratis closes the state machine when it closes this node's Raft division: when the node stops,
   * and also on its own (a node the cluster's configuration no longer holds; a JVM pause beyond
   * Ratis's close threshold; an error applying the log).
   */
  @Override
  public void close() throws IOException {
    try {
      if (snapshots != null) {
        snapshots.close();
      }
    } finally {
      snapshotThread.shutdown();
      super.close();
      closed.complete(null);
    }
  }

  /**
   * A snapshot the writer put in place, told on the writer's thread: the newest one from now on,
   * unless a newer one was installed from the leader meanwhile (that one stays).
   */
  private void published(SingleFileSnapshotInfo written) {
    latestSnapshot.accumulateAndGet(written, (known, w) -> known == null || w.getIndex() > known.getIndex() ? w : known);
  }

  /** {@return completes once Ratis has closed this state machine (see {@link #close()})} */
  public CompletableFuture<Void> closed() {
    return closed;
  }

  /** Ratis pauses the state machine before it installs a snapshot from the leader. */
  @Override
  public void pause() {
    getLifeCycle().transition(LifeCycle.State.PAUSING);
    getLifeCycle().transition(LifeCycle.State.PAUSED);
  }

  @Override
  public void reinitialize() throws IOException {
    // A snapshot was installed from the leader: it replaces everything.
    getLifeCycle().startAndTransition(this::loadLatestSnapshot, IOException.class);
  }

  @Override
  public StateMachineStorage getStateMachineStorage() {
    return storage;
  }

  /**
   * The latest snapshot, or null before the first: kept here because Ratis asks before every
   * append it sends a follower, and {@link SimpleStateMachineStorage} answers from memory only
   * once a snapshot exists. Until then it lists this node's snapshot directory on every call —
   * about 300 directory listings a second on a loaded leader younger than its first snapshot.
   */
  private final java.util.concurrent.atomic.AtomicReference<SnapshotInfo> latestSnapshot =
      new java.util.concurrent.atomic.AtomicReference<>();

  @Override
  public SnapshotInfo getLatestSnapshot() {
    return latestSnapshot.get();
  }

  private void loadLatestSnapshot() throws IOException {
    SingleFileSnapshotInfo snapshot = storage.loadLatestSnapshot();
    latestSnapshot.set(snapshot);
    if (snapshot == null) {
      return;
    }
    File file = snapshot.getFile().getPath().toFile();
    MD5Hash expected = snapshot.getFile().getFileDigest();
    if (expected != null) {
      MD5FileUtil.verifySavedMD5(file, expected);
    }
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file.toPath()))) {
      state.readSnapshot(in);
    }
    setLastAppliedTermIndex(snapshot.getTermIndex());
    loadedSnapshotIndex = snapshot.getIndex();
    keeper.reset(state.sessionTtls());
    clock.reset(state.clockMillis());
    watches.reset(state.revision());
    log.info(
        "{}: loaded snapshot {} at {}: {}", getId(), file.getName(), snapshot.getTermIndex(), state.counts()
            .toString().replace('\n', ' '));
  }

  /** The whole state for a backup: a copy taken under the state's lock, serialised outside it. */
  private SnapshotCopy snapshotCopy() {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    try {
      long revision = state.writeSnapshot(out);
      return SnapshotCopy.newBuilder().setRevision(revision).setData(com.google.protobuf.UnsafeByteOperations.unsafeWrap(out.toByteArray())).build();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException("could not copy the state", e);
    }
  }

  /**
   * Seeds a node of a new cluster with a backup's state, before the node's first start: the state
   * is written as this node's snapshot at term 0, index 0, so Raft's log begins after it on every
   * node restored from the same file. The revision jumps by {@code bumpRevision}, so no fencing
   * token the old cluster issued after the backup is issued again.
   */
  public void restoreOnFirstStart(Backup backup, long bumpRevision) {
    this.restore = backup;
    this.restoreBump = bumpRevision;
  }

  private Backup restore;
  private long restoreBump;

  private void writeRestoredSnapshot() throws IOException {
    state.readSnapshot(new java.io.ByteArrayInputStream(restore.body()));
    state.bumpRevision(restoreBump);
    state.markRestored(); // another cluster: its first leader gives it an identity of its own
    snapshots.writeNow(TermIndex.valueOf(0, 0), state.freeze()::writeTo);
    log.info(
        "{}: restored a backup at revision {} (taken at {}); revisions continue from {}",
        getId(), restore.revision(), java.time.Instant.ofEpochMilli(restore.takenAtMillis()), state.revision());
    restore = null;
  }

  @Override
  public long takeSnapshot() throws IOException {
    // Runs on the applying thread, so the copy of the state and the last applied index agree;
    // the copy is written on the snapshot writer's thread (see SnapshotWriter).
    return snapshots.take(getLastAppliedTermIndex(), () -> state.freeze()::writeTo);
  }

  /**
   * Stamps the entry with cluster time: Ratis calls this on the ready leader only, just before it
   * appends the entry. The stamp is a protobuf field appended to the command's bytes (a later
   * field wins), so the command is not parsed here.
   */
  @Override
  public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
    RaftServer.Division d = division;
    long term = d == null ? 0 : d.getInfo().getCurrentTerm();
    // Every committed entry is applied once the leader is ready: its clock starts from them.
    clock.lead(term);
    return TransactionContext.newBuilder()
        .setStateMachine(this)
        .setClientRequest(request)
        .setLogData(request.getMessage().getContent().concat(stampField(clock.leaderNow(term), Formats.LOG)))
        .build();
  }

  /**
   * {@return the stamp, and {@code Command.log_format} when the format is above 1} Format 1 is
   * written as no field at all: entries stay as they were before the field existed.
   */
  public static ByteString stampField(long millis, int logFormat) {
    byte[] stamp = withVarintField(new byte[0], Command.STAMP_MILLIS_FIELD_NUMBER, millis);
    return UnsafeByteOperations.unsafeWrap(
        logFormat <= 1 ? stamp : withVarintField(stamp, Command.LOG_FORMAT_FIELD_NUMBER, logFormat));
  }

  /**
   * {@return {@code message} with a varint field appended: parsed, the message has that field set
   * to {@code value} (for a scalar field, the last occurrence wins)}
   */
  static byte[] withVarintField(byte[] message, int field, long value) {
    byte[] bytes = java.util.Arrays.copyOf(message, message.length + 20);
    int n = putVarint(bytes, message.length, (long) field << 3); // wire type 0
    n = putVarint(bytes, n, value);
    return n == bytes.length ? bytes : java.util.Arrays.copyOf(bytes, n);
  }

  private static int putVarint(byte[] bytes, int at, long value) {
    int n = at;
    long v = value;
    while ((v & ~0x7FL) != 0) {
      bytes[n++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    bytes[n++] = (byte) v;
    return n;
  }

  /** Makes a rename in {@code dir} durable (its entry written), as a file's own sync does not. */
  @Override
  public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
    LogEntryProto entry = trx.getLogEntry();
    long index = entry.getIndex();
    Command command;
    try {
      command = Command.parseFrom(entry.getStateMachineLogEntry().getLogData().asReadOnlyByteBuffer());
    } catch (IOException e) {
      // Every replica fails the same entry the same way; nothing was changed.
      log.error("{}: log entry {} is not a command; skipped", getId(), index, e);
      updateLastAppliedTermIndex(entry.getTerm(), index);
      return CompletableFuture.failedFuture(e);
    }
    // A command from a newer version stops this node before any of the entry is applied (thrown
    // here, Ratis stops the node): skipping it would make the replicas diverge.
    Formats.refuseNewerLog(index, command.getLogFormat(), Formats.LOG);
    if (command.hasBatch()) {
      command.getBatch().getCommandsList().forEach(each -> CoreState.refuseIfNewer(index, each));
    } else {
      CoreState.refuseIfNewer(index, command);
    }
    // The leader stamped the entry, not the commands packed in it: they all share its stamp.
    long stamp = command.getStampMillis();
    Reply reply;
    if (command.hasBatch()) {
      BatchReply.Builder replies = BatchReply.newBuilder();
      for (Command each : command.getBatch().getCommandsList()) {
        replies.addReplies(apply(index, entry.getTerm(), stamp, each));
      }
      reply = Reply.newBuilder().setBatch(replies).build();
    } else {
      reply = apply(index, entry.getTerm(), stamp, command);
    }
    clock.applied(stamp);
    updateLastAppliedTermIndex(entry.getTerm(), index);
    return CompletableFuture.completedFuture(message(reply.toByteArray()));
  }

  /** Applies one command of an entry and tells the keeper and the watchers what changed. */
  private Reply apply(long index, long term, long stamp, Command command) {
    CoreState.Applied applied = state.apply(index, term, stamp, command);
    // The keeper first: a read (a keep-alive) may run as soon as the applied index moves.
    CoreState.Change change = applied.change();
    if (change instanceof CoreState.Change.Granted granted) {
      keeper.granted(granted.sessionId(), granted.ttlMillis());
    } else if (change instanceof CoreState.Change.Ended ended) {
      keeper.ended(ended.sessionId());
    }
    watches.publish(applied.events());
    return applied.reply();
  }

  /**
   * Stops (reason given) or resumes (null) answering reads and keep-alives on this node. Ratis
   * confirms them from the leader lease, which is unsafe while the nodes' election timeouts
   * differ; this is where a read is answered (on the leader, for reads any node forwards).
   */
  public void refuseReads(String reason) {
    readsRefused = reason;
  }

  /** Refuses reads until then ({@link System#nanoTime()}); 0 while none are. */
  private volatile long readsRefusedUntil;

  /**
   * Refuses reads for {@code period} from now: after a leadership move that Ratis reported failed
   * here, while its transferee may still win (LeadershipTransfer). A refused read is answered
   * "not now" and the client asks again, here or elsewhere.
   */
  public void refuseReadsFor(Duration period) {
    readsRefusedUntil = Math.max(1, System.nanoTime() + period.toNanos());
  }

  /** {@return until when ({@link System#nanoTime()}) reads are refused for a move; 0 if never} */
  long readsRefusedUntil() {
    return readsRefusedUntil;
  }

  @Override
  public CompletableFuture<Message> query(Message request) {
    String refused = readsRefused;
    long until = readsRefusedUntil;
    if (refused == null && until != 0 && System.nanoTime() - until < 0) {
      refused =
          "a leadership move from this node did not complete, and its new leader may still be elected;"
              + " reads wait for that election to end (a moment)";
    }
    if (refused != null) {
      // A StateMachineException goes back to the caller as the answer (any other exception makes
      // Ratis's client retry); this node keeps leading.
      return CompletableFuture.failedFuture(new StateMachineException(refused, false));
    }
    Query query;
    try {
      query = Query.parseFrom(request.getContent().asReadOnlyByteBuffer());
    } catch (IOException e) {
      return CompletableFuture.failedFuture(e);
    }
    switch (query.getKindCase()) {
      case GET:
        return CompletableFuture.completedFuture(message(state.get(query.getGet()).toByteArray()));
      case KEEP_ALIVE:
        return keepAlive(query.getKeepAlive(), query.getIdentity());
      case ACL_LIST:
        return CompletableFuture.completedFuture(message(state.aclList().toByteArray()));
      case COUNTS:
        return CompletableFuture.completedFuture(message(state.counts().toByteArray()));
      case SNAPSHOT:
        return CompletableFuture.completedFuture(message(snapshotCopy().toByteArray()));
      default:
        return CompletableFuture.failedFuture(
            new IOException("unknown query " + query.getKindCase()));
    }
  }

  /**
   * Extends sessions and tells which of their tenures an operator revoked. Ratis calls this only
   * after a ReadIndex round confirmed that this node was still the leader after the request
   * arrived, so no newer leader can have re-armed (and started measuring) these sessions before
   * the time the client sent it. A quiet session (see {@link SessionKeeper}) is confirmed only once
   * a Heard entry naming it is applied, so that no later leader counts it quiet from before this
   * keep-alive.
   */
  private CompletableFuture<Message> keepAlive(KeepAliveRequest request, String identity) {
    RaftServer.Division d = division;
    if (d == null || !d.getInfo().isLeader()) {
      return CompletableFuture.failedFuture(
          new IOException("not the leader; keep-alives count only on the leader"));
    }
    String clusterId = state.clusterId();
    if (clusterId.isEmpty()) {
      // A moment after a new (or restored) cluster's first election. An "alive" that names no
      // cluster could not be told from one of another cluster at the same addresses; Ratis's
      // client asks again, and the answer comes once the first leader's entry is applied.
      return CompletableFuture.failedFuture(
          new IOException("the cluster has no identity yet (its first leader is writing it): no keep-alive is"
              + " confirmed before it"));
    }
    long term = d.getInfo().getCurrentTerm();
    KeepAliveResponse.Builder response =
        KeepAliveResponse.newBuilder().setSequence(request.getSequence()).setClusterId(clusterId);
    Map<Long, Long> quiet = null;
    for (long id : request.getSessionIdsList()) {
      // The state also lists the session's revoked tenures, so that a holder whose watch is
      // silent still stops using them within one keep-alive; an operator-revoked session is gone.
      // A session of another identity is neither extended nor described (docs/security.md).
      CoreState.SessionStatus status = state.keepAlive(id, identity, response);
      if (status == CoreState.SessionStatus.DENIED) {
        response.addDenied(id);
        continue;
      }
      long result =
          status == CoreState.SessionStatus.GONE
              ? SessionKeeper.GONE
              : keeper.keepAlive(id, term, status == CoreState.SessionStatus.QUIET);
      if (result == SessionKeeper.ALIVE) {
        response.addAlive(id);
      } else if (result == SessionKeeper.GONE) {
        response.addGone(id);
      } else {
        if (quiet == null) {
          quiet = new LinkedHashMap<>();
        }
        quiet.put(id, result);
      }
    }
    if (quiet == null) {
      return CompletableFuture.completedFuture(message(response.build().toByteArray()));
    }
    return confirmQuiet(term, quiet, response, MAX_HEARD_ROUNDS);
  }

  /** Writes a Heard entry for the quiet sessions, then confirms them. */
  private CompletableFuture<Message> confirmQuiet(
      long term, Map<Long, Long> epochs, KeepAliveResponse.Builder response, int roundsLeft) {
    Command heard = Command.newBuilder().setHeard(Heard.newBuilder().addAllSessionIds(epochs.keySet())).build();
    return writeLocally
        .apply(heard)
        .thenCompose(
            reply -> {
              Map<Long, Long> again = null;
              for (Map.Entry<Long, Long> e : epochs.entrySet()) {
                long id = e.getKey();
                long result =
                    state.hasSession(id) ? keeper.confirmHeard(id, term, e.getValue()) : SessionKeeper.GONE;
                if (result == SessionKeeper.ALIVE) {
                  response.addAlive(id);
                } else if (result == SessionKeeper.GONE) {
                  response.addGone(id);
                } else {
                  if (again == null) {
                    again = new LinkedHashMap<>();
                  }
                  again.put(id, result); // marked quiet again by a new term's leader (this node)
                }
              }
              if (again == null) {
                return CompletableFuture.completedFuture(message(response.build().toByteArray()));
              }
              if (roundsLeft <= 1) {
                return CompletableFuture.failedFuture(
                    new IOException("keep-alive not confirmed: the sessions were marked quiet again meanwhile"));
              }
              return confirmQuiet(term, again, response, roundsLeft - 1);
            });
  }

  @Override
  public void notifyLeaderReady() {
    onLeaderReady.run();
  }

  /**
   * Runs {@code listener} each time this node applies the first entry of a newer term, on the
   * applying thread; it must not block. That term's leader has committed an entry of its own, so
   * it serves: a follower learns it no sooner, and the leader itself is ready right then.
   */
  public void onLeaderServing(Runnable listener) {
    onLeaderServing = listener;
  }

  @Override
  protected boolean updateLastAppliedTermIndex(TermIndex applied) {
    boolean updated = super.updateLastAppliedTermIndex(applied);
    if (applied.getTerm() > appliedTerm) { // once a term: a long compare per entry otherwise
      appliedTerm = applied.getTerm();
      onLeaderServing.run();
    }
    return updated;
  }

  private static Message message(byte[] bytes) {
    ByteString content = UnsafeByteOperations.unsafeWrap(bytes);
    return Message.valueOf(content);
  }
}
