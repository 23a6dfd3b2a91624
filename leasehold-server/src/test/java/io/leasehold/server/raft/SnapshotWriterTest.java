package io.leasehold.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.server.replicated.CoreState;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.io.BufferedInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.MD5FileUtil;
import org.apache.ratis.util.SizeInBytes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The snapshot writer's protocol with Ratis, on a real snapshot directory, with writes run only
 * when the test lets them (a held executor): the applying thread is never made to wait for a write,
 * Ratis hears of a snapshot only once it is on disk with its MD5, a write overtaken by an installed
 * snapshot is dropped, and a failed write is reported and tried again.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SnapshotWriterTest {

  @TempDir Path dir;

  private RaftStorage raftStorage;
  private final SnapshotStorage storage = new SnapshotStorage();
  private final HeldExecutor writes = new HeldExecutor();
  private final List<SingleFileSnapshotInfo> published = new ArrayList<>();
  private final AtomicLong installed = new AtomicLong(-1);
  private SnapshotWriter writer;
  private final CoreState state = new CoreState();
  private long index;

  /** Runs each task only when the test says so. */
  private static final class HeldExecutor implements Executor {
    private final Deque<Runnable> held = new ArrayDeque<>();

    @Override
    public synchronized void execute(Runnable task) {
      held.add(task);
    }

    synchronized int waiting() {
      return held.size();
    }

    void runAll() {
      Runnable next;
      while ((next = poll()) != null) {
        next.run();
      }
    }

    private synchronized Runnable poll() {
      return held.poll();
    }
  }

  @BeforeEach
  void open() throws IOException {
    raftStorage =
        RaftStorage.newBuilder()
            .setDirectory(dir.toFile())
            .setOption(RaftStorage.StartupOption.FORMAT)
            .setLogCorruptionPolicy(RaftServerConfigKeys.Log.CorruptionPolicy.EXCEPTION)
            .setStorageFreeSpaceMin(SizeInBytes.ONE_MB)
            .build();
    raftStorage.initialize();
    storage.init(raftStorage);
    writer = new SnapshotWriter("n1", storage, writes, published::add, installed::get);
  }

  @AfterEach
  void close() throws IOException {
    raftStorage.close();
  }

  @Test
  void theApplyingThreadOnlyCopiesTheStateAndRatisHearsOfTheSnapshotOnceItIsOnDisk() throws IOException {
    grantSessions(3);
    TermIndex at = TermIndex.valueOf(1, index);

    assertThat(writer.take(at, this::copy)).as("while the write waits").isEqualTo(RaftLog.INVALID_LOG_INDEX);
    assertThat(writes.waiting()).as("the write was handed on, not done on the applying thread").isOne();
    assertThat(snapshotFiles()).as("nothing in place yet").isEmpty();
    // Applies go on meanwhile; the snapshot is of the state when it was asked for.
    grantSessions(2);
    assertThat(writer.take(TermIndex.valueOf(1, index), this::copy)).isEqualTo(RaftLog.INVALID_LOG_INDEX);
    assertThat(writes.waiting()).as("one write at a time").isOne();

    writes.runAll();
    File file = storage.getSnapshotFile(at.getTerm(), at.getIndex());
    assertThat(snapshotFiles()).as("in place as soon as written").containsExactly(file.getName());
    long told = writer.take(TermIndex.valueOf(1, index), this::copy);

    assertThat(told).as("Ratis is told at its next call").isEqualTo(at.getIndex());
    MD5FileUtil.verifySavedMD5(file, MD5FileUtil.computeMd5ForFile(file));
    assertThat(published).singleElement().satisfies(s -> assertThat(s.getTermIndex()).isEqualTo(at));
    assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(at);
    CoreState loaded = new CoreState();
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file.toPath()))) {
      loaded.readSnapshot(in);
    }
    assertThat(loaded.sessionTtls()).as("the state as it was when the snapshot was asked for").hasSize(3);
    assertThat(writes.waiting()).as("publishing starts no new write").isZero();
  }

  /**
   * Ratis asks for a snapshot only after it applies an entry: a write that finishes after a
   * cluster's last write must be put in place without waiting for another, or an idle node keeps
   * its whole log and loses the written snapshot at its next start.
   */
  @Test
  void aWriteThatFinishesWhenNothingMoreIsAppliedIsPutInPlace() throws IOException {
    grantSessions(2);
    TermIndex at = TermIndex.valueOf(1, index);
    writer.take(at, this::copy);

    writes.runAll(); // and no further call from Ratis: the cluster went quiet

    File file = storage.getSnapshotFile(at.getTerm(), at.getIndex());
    assertThat(snapshotFiles()).containsExactly(file.getName());
    MD5FileUtil.verifySavedMD5(file, MD5FileUtil.computeMd5ForFile(file));
    assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(at);
    assertThat(published).singleElement().satisfies(s -> {
      assertThat(s.getTermIndex()).isEqualTo(at);
      assertThat(s.getFile().getFileSize()).as("what Ratis sends a follower that installs it").isEqualTo(file.length()).isPositive();
    });
  }

  @Test
  void aWriteOvertakenByASnapshotFromTheLeaderIsDropped() throws IOException {
    grantSessions(1);
    writer.take(TermIndex.valueOf(1, index), this::copy);
    installed.set(index + 100); // the leader installed a newer snapshot meanwhile
    writes.runAll();

    assertThat(writer.take(TermIndex.valueOf(1, index + 100), this::copy)).isEqualTo(RaftLog.INVALID_LOG_INDEX);
    assertThat(published).isEmpty();
    try (var files = Files.list(snapshotDir())) {
      assertThat(files.map(p -> p.getFileName().toString())).as("not even its temporary file").isEmpty();
    }
  }

  @Test
  void aFailedWriteIsReportedAndTheNextCallTriesAgain() throws IOException {
    grantSessions(1);
    CoreState.Frozen good = state.freeze();
    writer.take(TermIndex.valueOf(1, index), () -> out -> {
      throw new IOException("No space left on device");
    });
    writes.runAll();

    assertThatThrownBy(() -> writer.take(TermIndex.valueOf(1, index), this::copy))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("could not write a snapshot");
    assertThat(writer.take(TermIndex.valueOf(1, index), () -> good::writeTo)).isEqualTo(RaftLog.INVALID_LOG_INDEX);
    writes.runAll();
    assertThat(writer.take(TermIndex.valueOf(1, index), this::copy)).isEqualTo(index);
  }

  @Test
  void aWriteInProgressWhenTheNodeStopsIsKeptAndLeftoversOfADeadOneAreRemoved() throws IOException {
    grantSessions(1);
    writer.take(TermIndex.valueOf(1, index), this::copy);
    Files.writeString(snapshotDir().resolve("snapshot.1_7" + SnapshotWriter.TEMPORARY), "half a snapshot");
    Thread stopping = new Thread(() -> writer.finish(Duration.ofSeconds(30)));
    stopping.start();
    org.awaitility.Awaitility.await().until(() -> writes.waiting() == 1);
    writes.runAll();
    org.awaitility.Awaitility.await().until(() -> !stopping.isAlive());

    assertThat(snapshotFiles()).containsExactly(storage.getSnapshotFile(1, index).getName());
    writer.removeLeftovers();
    try (var files = Files.list(snapshotDir())) {
      assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(SnapshotWriter.TEMPORARY));
    }
  }

  @Test
  void noWriteStartsOnceTheNodeStopped() throws IOException {
    grantSessions(1);
    writer.finish(Duration.ofSeconds(1));

    assertThat(writer.take(TermIndex.valueOf(1, index), this::copy)).isEqualTo(RaftLog.INVALID_LOG_INDEX);
    assertThat(writes.waiting()).as("nothing handed to an executor being shut down").isZero();
  }

  private void grantSessions(int n) {
    for (int i = 0; i < n; i++) {
      long at = ++index;
      GrantRequest grant =
          GrantRequest.newBuilder()
              .setCall(CallId.newBuilder().setClientIdHigh(7).setClientIdLow(7).setCallId(at))
              .setOwner("owner")
              .setTtlMillis(10_000)
              .build();
      Reply reply = state.apply(at, 1, 1_000 + at, Command.newBuilder().setGrant(grant).build()).reply();
      assertThat(reply.getKindCase()).as(reply.toString()).isEqualTo(Reply.KindCase.OK);
    }
  }

  private SnapshotWriter.Copy copy() {
    return state.freeze()::writeTo;
  }

  private Path snapshotDir() {
    return storage.getSnapshotFile(0, 0).getParentFile().toPath();
  }

  /** The snapshot files in place (Ratis's naming), not their MD5s or temporary files. */
  private List<String> snapshotFiles() throws IOException {
    try (var files = Files.list(snapshotDir())) {
      return files.map(p -> p.getFileName().toString()).filter(n -> n.matches("snapshot\\.\\d+_\\d+")).toList();
    }
  }
}
