package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.Limits;
import io.leasehold.server.replicated.CoreState;
import io.leasehold.server.state.Command;
import org.junit.jupiter.api.Test;

/**
 * A client that sends each write from a fresh client id with a far call id — deletes of keys that
 * do not exist, which add no data — makes the state remember every one of those clients for
 * minutes. Counted toward {@code --max-data-bytes}: once what is remembered of calls holds the
 * quota, a client the state does not know is refused, a client it knows still writes, and once the
 * flood's clients are forgotten new clients write again. Without the count the flood grew every
 * replica's heap without bound (about 1.3 KB per call; a batch carries a thousand).
 */
class CallRecordQuotaTest {

  private static final long QUOTA = Limits.LEAST_DATA_BYTES;

  private final CoreState state = new CoreState();
  private final LimitChecks checks = new LimitChecks(Limits.DEFAULTS.withMaxDataBytes(QUOTA), state);
  private long index;

  private static Command delete(long clientHigh, long callId) {
    return Command.newBuilder()
        .setDelete(DeleteRequest.newBuilder()
            .setCall(CallId.newBuilder().setClientIdHigh(clientHigh).setClientIdLow(7).setCallId(callId))
            .setKey("nothing/here"))
        .build();
  }

  private void apply(Command command, long stampMillis) {
    state.apply(++index, 1, stampMillis, command);
  }

  @Test
  void aFloodOfFreshClientIdsIsBoundedByTheQuotaAndKnownClientsStillWrite() {
    apply(delete(1, 1), 1_000); // a well-behaved client, known before the flood
    long flood = 0;
    while (state.callRecordBytes() < QUOTA) {
      Command fresh = delete(1_000 + flood, 1L << 40);
      assertThat(checks.overLimit(fresh)).as("below the quota, fresh client %d writes", flood).isNull();
      apply(fresh, 1_000);
      flood++;
    }
    assertThat(flood).as("clients it took to fill the quota").isBetween(100L, QUOTA / 256);
    assertThat(state.dataBytes()).as("no data was written").isZero();

    assertThat(checks.overLimit(delete(9_999_999, 1L << 40)))
        .as("a client the state does not know, at the quota")
        .startsWith("the replicated state remembers ")
        .contains("bytes of clients' calls, at or over --max-data-bytes " + QUOTA)
        .endsWith("; nothing was written");
    assertThat(checks.overLimit(delete(1, 2))).as("a client the state knows still deletes").isNull();
    Command put = Command.newBuilder()
        .setPut(PutRequest.newBuilder()
            .setCall(CallId.newBuilder().setClientIdHigh(1).setClientIdLow(7).setCallId(3))
            .setKey("k").setValue(ByteString.copyFromUtf8("v")))
        .build();
    assertThat(checks.overLimit(put)).as("nobody adds data at the quota").contains("at or over --max-data-bytes");

    // The flood stops; its clients are forgotten once idle for the window (the state looks every
    // 4096 entries), and a new client writes again.
    long later = 1_000 + CoreState.CALLS_REMEMBERED_MILLIS + 1;
    long callId = 2;
    while (index % 4096 != 4095) {
      apply(delete(1, callId++), 1_000 + (later - 1_000) * index / 4096);
    }
    apply(delete(1, callId), later);
    assertThat(state.callRecordBytes()).as("the flood's clients forgotten: only the writing client's calls").isLessThan(QUOTA / 10);
    assertThat(checks.overLimit(delete(9_999_999, 1L << 40))).isNull();
  }
}
