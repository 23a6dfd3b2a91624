package io.leasehold.server;

import io.leasehold.core.proto.KeepAliveRequest;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.server.state.BatchReply;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Query;
import io.leasehold.server.state.Reply;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CompletableFuture;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
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
 * and keep-alives, and writes and loads snapshots.
 */
final class LeaseStateMachine extends BaseStateMachine {

  private static final Logger log = LoggerFactory.getLogger(LeaseStateMachine.class);

  private final CoreState state = new CoreState();
  private final SessionKeeper keeper;
  private final WatchHub watches;
  private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
  private volatile RaftServer.Division division;
  private volatile long loadedSnapshotIndex = -1;

  private final Runnable onLeaderReady;

  /**
   * @param onLeaderReady called when this node leads and has committed an entry of its term
   */
  LeaseStateMachine(SessionKeeper keeper, WatchHub watches, Runnable onLeaderReady) {
    this.keeper = keeper;
    this.watches = watches;
    this.onLeaderReady = onLeaderReady;
  }

  /** {@return the log index of the last snapshot loaded (at start, or installed from the leader)} */
  long loadedSnapshotIndex() {
    return loadedSnapshotIndex;
  }

  CoreState state() {
    return state;
  }

  @Override
  public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage)
      throws IOException {
    super.initialize(server, groupId, raftStorage);
    division = server.getDivision(groupId);
    storage.init(raftStorage);
    getLifeCycle().startAndTransition(this::loadLatestSnapshot, IOException.class);
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

  private void loadLatestSnapshot() throws IOException {
    SingleFileSnapshotInfo snapshot = storage.loadLatestSnapshot();
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
    watches.reset(state.revision());
    log.info(
        "{}: loaded snapshot {} at {}: {}", getId(), file.getName(), snapshot.getTermIndex(), state.counts()
            .toString().replace('\n', ' '));
  }

  @Override
  public long takeSnapshot() throws IOException {
    // Runs on the applying thread, so the state and the last applied index agree.
    TermIndex last = getLastAppliedTermIndex();
    File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
    File tmp = new File(file.getParentFile(), file.getName() + ".tmp");
    try (FileOutputStream fileOut = new FileOutputStream(tmp);
        OutputStream out = new BufferedOutputStream(fileOut)) {
      state.writeSnapshot(out);
      out.flush();
      // On disk before Ratis may purge the log entries it replaces.
      fileOut.getFD().sync();
    }
    Files.move(tmp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
    syncDirectory(file.getParentFile().toPath());
    MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
    storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
    log.info("{}: wrote snapshot {} ({} bytes)", getId(), file.getName(), file.length());
    return last.getIndex();
  }

  /** Makes a rename in {@code dir} durable (its entry written), as a file's own sync does not. */
  private static void syncDirectory(java.nio.file.Path dir) throws IOException {
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
    }
  }

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
    Reply reply;
    if (command.hasBatch()) {
      BatchReply.Builder replies = BatchReply.newBuilder();
      for (Command each : command.getBatch().getCommandsList()) {
        replies.addReplies(apply(index, entry.getTerm(), each));
      }
      reply = Reply.newBuilder().setBatch(replies).build();
    } else {
      reply = apply(index, entry.getTerm(), command);
    }
    updateLastAppliedTermIndex(entry.getTerm(), index);
    return CompletableFuture.completedFuture(message(reply.toByteArray()));
  }

  /** Applies one command of an entry and tells the keeper and the watchers what changed. */
  private Reply apply(long index, long term, Command command) {
    CoreState.Applied applied = state.apply(index, term, command);
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

  @Override
  public CompletableFuture<Message> query(Message request) {
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
        return keepAlive(query.getKeepAlive());
      case COUNTS:
        return CompletableFuture.completedFuture(message(state.counts().toByteArray()));
      default:
        return CompletableFuture.failedFuture(
            new IOException("unknown query " + query.getKindCase()));
    }
  }

  /**
   * Extends sessions. Ratis calls this only after a ReadIndex round confirmed that this node was
   * still the leader after the request arrived, so no newer leader can have re-armed (and started
   * measuring) these sessions before the time the client sent it.
   */
  private CompletableFuture<Message> keepAlive(KeepAliveRequest request) {
    RaftServer.Division d = division;
    if (d == null || !d.getInfo().isLeader()) {
      return CompletableFuture.failedFuture(
          new IOException("not the leader; keep-alives count only on the leader"));
    }
    KeepAliveResponse.Builder response = KeepAliveResponse.newBuilder().setSequence(request.getSequence());
    for (long id : request.getSessionIdsList()) {
      if (state.hasSession(id) && keeper.keepAlive(id)) {
        response.addAlive(id);
      } else {
        response.addGone(id);
      }
    }
    return CompletableFuture.completedFuture(message(response.build().toByteArray()));
  }

  @Override
  public void notifyLeaderChanged(RaftGroupMemberId groupMemberId, RaftPeerId newLeaderId) {
    if (newLeaderId != null && newLeaderId.equals(groupMemberId.getPeerId())) {
      keeper.rearmAll();
      log.info("{}: became leader; re-armed {} sessions for a full TTL", groupMemberId, keeper.size());
    }
  }

  @Override
  public void notifyLeaderReady() {
    keeper.rearmAll();
    onLeaderReady.run();
  }

  private static Message message(byte[] bytes) {
    ByteString content = UnsafeByteOperations.unsafeWrap(bytes);
    return Message.valueOf(content);
  }
}
