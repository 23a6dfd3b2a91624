package io.leasehold.server.replicated;

import io.leasehold.server.raft.LeaseStateMachine;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.Tenure;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.SnapshotBody;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzz tests of the replicated state (docs/testing.md, "Fuzzing"): arbitrary log entries and
 * arbitrary snapshot files. Under plain {@code mvn test} they replay the committed inputs in
 * {@code src/test/resources/io/leasehold/server/CoreStateFuzzTestInputs/}; with {@code
 * JAZZER_FUZZ=1} Jazzer generates new ones.
 */
@Timeout(120)
class CoreStateFuzzTest {

  /** Entries one input may hold, so that one execution stays short. */
  private static final int MAX_ENTRIES = 64;

  /**
   * Log entries of any content, applied as {@link LeaseStateMachine#applyTransaction} applies them,
   * to two fresh replicas: after every entry both have the same state (snapshot bytes) and gave
   * the same reply and events; an entry that throws is refused by both with the documented {@link
   * CoreState.NewerCommandException} and changed nothing; and the final state survives a snapshot
   * round trip unchanged (nothing in it is inconsistent enough for a snapshot to refuse or alter).
   *
   * <p>Input: records of one byte (the term, 1 to 4), two bytes (big-endian length) and that many
   * bytes of a {@code Command}.
   */
  @FuzzTest
  void arbitraryLogEntriesNeverCorruptOrDivergeTheReplicas(byte[] input) throws IOException {
    CoreState a = new CoreState();
    CoreState b = new CoreState();
    int at = 0;
    long index = 0;
    while (at + 3 <= input.length && index < MAX_ENTRIES) {
      long term = 1 + (input[at] & 3);
      int length = ((input[at + 1] & 0xFF) << 8 | (input[at + 2] & 0xFF));
      at += 3;
      int end = Math.min(input.length, at + length);
      byte[] entry = java.util.Arrays.copyOfRange(input, at, end);
      at = end;
      index++;
      Command command;
      try {
        command = Command.parseFrom(entry);
      } catch (InvalidProtocolBufferException e) {
        continue; // applyTransaction skips an entry that is not a command, on every replica
      }
      String before = describe(a);
      Outcome first = applyEntry(a, index, term, command);
      Outcome second = applyEntry(b, index, term, command);
      assertThat(second).as("replica b's outcome of entry %d: %s", index, command).isEqualTo(first);
      if (first.refusal() != null) {
        assertThat(first.refusal())
            .as("entry %d refused with %s", index, first.refusal())
            .startsWith(CoreState.NewerCommandException.class.getName() + ": ");
        assertThat(describe(a)).as("state after refused entry %d", index).isEqualTo(before);
      }
      assertThat(describe(b)).as("replica b after entry %d: %s", index, command).isEqualTo(describe(a));
      assertThat(a.dataBytes()).as("running data bytes after entry %d: %s", index, command).isEqualTo(a.recountDataBytes());
      assertThat(a.callRecordBytes()).as("running call record bytes after entry %d: %s", index, command)
          .isEqualTo(a.recountCallRecordBytes());
    }
    CoreState copy = new CoreState();
    copy.readSnapshot(new ByteArrayInputStream(snapshot(a)));
    assertThat(describe(copy)).as("state after a snapshot round trip").isEqualTo(describe(a));
    assertThat(copy.counts()).as("counts after a snapshot round trip").isEqualTo(a.counts());
    assertThat(copy.dataBytes()).as("data bytes after a snapshot round trip").isEqualTo(a.dataBytes());
    assertThat(copy.callRecordBytes()).as("call record bytes after a snapshot round trip").isEqualTo(a.callRecordBytes());
  }

  /**
   * Snapshot files of any content, loaded over a state that holds sessions, keys, a held lease
   * and a tombstone: either the load succeeds (and the loaded state survives a round trip
   * unchanged), or it is refused with an {@link IOException} that says why, and the state is
   * exactly what it was before. Input: the file's bytes.
   */
  @FuzzTest
  void aCorruptSnapshotIsRefusedAndNeverHalfLoaded(byte[] file) throws IOException {
    CoreState state = populated();
    String before = describe(state);
    Object countsBefore = state.counts();
    try {
      state.readSnapshot(new ByteArrayInputStream(file));
    } catch (IOException e) {
      assertThat(e.getMessage()).as("refusal message").isNotBlank();
      assertThat(describe(state)).as("state after a refused load (%s)", e.getMessage()).isEqualTo(before);
      assertThat(state.counts()).as("counts after a refused load (%s)", e.getMessage()).isEqualTo(countsBefore);
      return;
    }
    CoreState copy = new CoreState();
    copy.readSnapshot(new ByteArrayInputStream(snapshot(state)));
    assertThat(describe(copy)).as("loaded state after a round trip").isEqualTo(describe(state));
    assertThat(copy.counts()).as("loaded counts after a round trip").isEqualTo(state.counts());
  }

  /** What applying one entry did: the replies and events, or the exception it was refused with. */
  private record Outcome(List<Object> replies, String refusal) {}

  /** Applies an entry as {@link LeaseStateMachine#applyTransaction} does, batches included. */
  private static Outcome applyEntry(CoreState state, long index, long term, Command command) {
    List<Object> replies = new ArrayList<>();
    try {
      if (command.hasBatch()) {
        command.getBatch().getCommandsList().forEach(each -> CoreState.refuseIfNewer(index, each));
        for (Command each : command.getBatch().getCommandsList()) {
          CoreState.Applied applied = state.apply(index, term, command.getStampMillis(), each);
          replies.add(List.of(applied.reply(), applied.events(), applied.change()));
        }
      } else {
        CoreState.Applied applied = state.apply(index, term, command.getStampMillis(), command);
        replies.add(List.of(applied.reply(), applied.events(), applied.change()));
      }
    } catch (RuntimeException e) {
      return new Outcome(replies, e.toString());
    }
    return new Outcome(replies, null);
  }

  /** {@return the whole state as text (its snapshot's body), so that a difference reads well} */
  static String describe(CoreState state) {
    byte[] bytes = snapshot(state);
    try {
      return SnapshotBody.parseDelimitedFrom(new ByteArrayInputStream(bytes, 8, bytes.length - 8)).toString();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static byte[] snapshot(CoreState state) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      state.writeSnapshot(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /** A state with two sessions, a held lease with an attached key, a plain key and a tombstone. */
  static CoreState populated() {
    CoreState state = new CoreState();
    CallId.Builder call = CallId.newBuilder().setClientIdHigh(7).setClientIdLow(8);
    long index = 0;
    state.apply(++index, 1, grant(call.setCallId(1), 5_000));
    state.apply(++index, 1, grant(call.setCallId(2), 5_000));
    state.apply(
        ++index, 1,
        Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(call.setCallId(3)).setName("jobs").setHolder("h1").setRequestId(1).setSessionId(1))
            .build());
    state.apply(
        ++index, 1,
        Command.newBuilder()
            .setPut(PutRequest.newBuilder().setCall(call.setCallId(4)).setKey("member").setValue(ByteString.copyFromUtf8("v"))
                .setTenure(Tenure.newBuilder().setName("jobs").setHolder("h1").setToken(1)))
            .build());
    state.apply(
        ++index, 1,
        Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(call.setCallId(5)).setName("cron").setHolder("h2").setRequestId(1).setSessionId(2))
            .build());
    state.apply(
        ++index, 1,
        Command.newBuilder().setDelete(DeleteRequest.newBuilder().setCall(call.setCallId(6)).setKey(CoreState.LEASE_PREFIX + "cron")).build());
    state.apply(
        ++index, 1,
        Command.newBuilder()
            .setPut(PutRequest.newBuilder().setCall(call.setCallId(7)).setKey("config").setValue(ByteString.copyFromUtf8("x")))
            .build());
    return state;
  }

  private static Command grant(CallId.Builder call, long ttlMillis) {
    return Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call).setOwner("o").setTtlMillis(ttlMillis)).build();
  }
}
