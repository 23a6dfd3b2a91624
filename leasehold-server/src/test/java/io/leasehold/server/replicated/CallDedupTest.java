package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.CallId;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotBody;
import org.junit.jupiter.api.Test;

/** The dedup of retried calls on its own: what is applied once, what stays open, what is forgotten. */
class CallDedupTest {

  private static final CallId CLIENT = CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(1).build();

  private static Reply reply(String text) {
    return Replies.ok(ByteString.copyFromUtf8(text));
  }

  @Test
  void anAppliedCallIsAnsweredFromItsReplyAndCallsItOvertookStayOpen() {
    CallDedup dedup = new CallDedup();
    CallDedup.Calls calls = dedup.of(CLIENT);
    calls.remember(100, reply("hundred"), 1_000);

    assertThat(calls.atOrBelowHighest(100)).isTrue();
    assertThat(calls.reply(100)).isEqualTo(reply("hundred"));
    assertThat(calls.atOrBelowHighest(101)).as("a later call is new").isFalse();
    // Below a first call only a few ids stay open (a far first call must not cost memory).
    assertThat(calls.openHole(99, 1_000)).isTrue();
    assertThat(calls.openHole(100 - CallDedup.FIRST_CALL_HOLES, 1_000)).isTrue();
    assertThat(calls.openHole(99 - CallDedup.FIRST_CALL_HOLES, 1_000)).isFalse();

    calls.remember(99, reply("ninety-nine"), 2_000);
    assertThat(calls.openHole(99, 2_000)).as("applied now: no longer a hole").isFalse();
    assertThat(calls.reply(99)).isEqualTo(reply("ninety-nine"));
    long later = 100 + CallDedup.MAX_HOLES_PER_CLIENT + 10;
    calls.remember(later, reply("later"), 2_000);
    assertThat(calls.openHole(later - CallDedup.MAX_HOLES_PER_CLIENT, 2_000))
        .as("after the first call, ids up to the hole limit below a later one stay open").isTrue();
    assertThat(calls.openHole(later - CallDedup.MAX_HOLES_PER_CLIENT - 1, 2_000)).isFalse();
  }

  @Test
  void aHoleClosesAfterTheWindowAndAnIdleClientIsForgotten() {
    CallDedup dedup = new CallDedup();
    CallDedup.Calls calls = dedup.of(CLIENT);
    calls.remember(3, reply("three"), 0);

    assertThat(calls.openHole(2, CallDedup.DEDUP_WINDOW_MILLIS)).isTrue();
    assertThat(calls.openHole(2, CallDedup.DEDUP_WINDOW_MILLIS + 1)).isFalse();

    dedup.forgetIdle(CallDedup.DEDUP_WINDOW_MILLIS);
    assertThat(dedup.of(CLIENT)).as("still within the window").isSameAs(calls);
    dedup.forgetIdle(CallDedup.DEDUP_WINDOW_MILLIS + 1);
    assertThat(dedup.of(CLIENT)).as("forgotten: a new record").isNotSameAs(calls);
  }

  @Test
  void onlyTheLastRepliesAreKept() {
    CallDedup.Calls calls = new CallDedup().of(CLIENT);
    for (long id = 1; id <= CoreState.REPLIES_KEPT_PER_CLIENT + 1; id++) {
      calls.remember(id, reply("r" + id), 0);
    }
    assertThat(calls.reply(1)).as("the oldest dropped").isNull();
    assertThat(calls.reply(2)).isNotNull();
  }

  @Test
  void aSnapshotKeepsHighHolesAndRepliesAndTheFirstFormatCountsEveryLowerIdApplied() {
    CallDedup dedup = new CallDedup();
    dedup.of(CLIENT).remember(7, reply("seven"), 100);
    SnapshotBody.Builder body = SnapshotBody.newBuilder();
    dedup.writeTo(body);

    CallDedup read = new CallDedup();
    read.readFrom(body.getClientsList(), false, 100);
    CallDedup.Calls calls = read.of(CLIENT);
    assertThat(calls.reply(7)).isEqualTo(reply("seven"));
    assertThat(calls.openHole(6, 100)).isTrue();

    CallDedup old = new CallDedup();
    old.readFrom(body.getClientsList(), true, 100);
    assertThat(old.of(CLIENT).openHole(6, 100)).as("format 1 kept no holes").isFalse();
    assertThat(old.of(CLIENT).atOrBelowHighest(7)).isTrue();
  }

  /**
   * What is remembered is counted in bytes as it changes — a client, its holes, its kept replies —
   * and the running count always equals a count anew: through holes made and closed, holes and
   * replies dropped at their bounds, idle clients forgotten and a snapshot read back.
   */
  @Test
  void theRememberedCallsAreCountedInBytesAsTheyChange() {
    CallDedup dedup = new CallDedup();
    assertThat(dedup.bytes()).isZero();
    CallDedup.Calls calls = dedup.of(CLIENT);
    assertThat(dedup.bytes()).as("a client").isEqualTo(CallDedup.BYTES_PER_CLIENT);

    calls.remember(100, reply("hundred"), 0);
    long oneReply = CallDedup.BYTES_PER_REPLY + reply("hundred").getSerializedSize();
    assertThat(dedup.bytes()).as("a far first call: the client, its few holes, its reply")
        .isEqualTo(CallDedup.BYTES_PER_CLIENT + (long) CallDedup.FIRST_CALL_HOLES * CallDedup.BYTES_PER_HOLE + oneReply);
    assertThat(dedup.bytes()).isEqualTo(dedup.recountBytes());

    calls.remember(99, reply("hundred"), 0); // closes a hole
    calls.remember(100 + 5 * CallDedup.MAX_HOLES_PER_CLIENT, reply("far"), 1); // holes dropped at their bound
    for (long id = 1; id <= CoreState.REPLIES_KEPT_PER_CLIENT + 3; id++) { // replies dropped at theirs
      calls.remember(100 + 5 * CallDedup.MAX_HOLES_PER_CLIENT + id, reply("r" + id), 2);
    }
    CallDedup.Calls other = dedup.of(CLIENT.toBuilder().setClientIdLow(3).build());
    other.remember(100, reply("seven"), CallDedup.DEDUP_WINDOW_MILLIS);
    assertThat(dedup.bytes()).isEqualTo(dedup.recountBytes());

    SnapshotBody.Builder body = SnapshotBody.newBuilder();
    dedup.writeTo(body);
    CallDedup read = new CallDedup();
    read.readFrom(body.getClientsList(), false, 0);
    assertThat(read.bytes()).as("read back from a snapshot").isEqualTo(dedup.bytes()).isEqualTo(read.recountBytes());

    dedup.forgetIdle(CallDedup.DEDUP_WINDOW_MILLIS + 3); // the first client is idle, the other not
    assertThat(dedup.bytes()).isEqualTo(dedup.recountBytes())
        .isEqualTo(CallDedup.BYTES_PER_CLIENT + (long) CallDedup.FIRST_CALL_HOLES * CallDedup.BYTES_PER_HOLE
            + CallDedup.BYTES_PER_REPLY + reply("seven").getSerializedSize());
    dedup.forgetIdle(3 * CallDedup.DEDUP_WINDOW_MILLIS);
    assertThat(dedup.bytes()).as("everyone forgotten").isZero();
  }
}
