package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import io.leasehold.server.state.Failure;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class CoreStateTest {

  private final CoreState state = new CoreState();
  private long index;
  private long calls;

  private long term = 1;

  private CoreState.Applied apply(Command command) {
    return state.apply(++index, term, command);
  }

  private CallId call() {
    return CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(++calls).build();
  }

  private long grant(long ttlMillis) throws IOException {
    Command c = Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(ttlMillis)).build();
    return GrantResponse.parseFrom(apply(c).reply().getOk()).getSessionId();
  }

  private AcquireResponse acquire(String name, String holder, long requestId, long session) throws IOException {
    return acquire(call(), name, holder, requestId, session);
  }

  private AcquireResponse acquire(CallId call, String name, String holder, long requestId, long session) throws IOException {
    Command c =
        Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(call).setName(name).setHolder(holder).setRequestId(requestId).setSessionId(session))
            .build();
    CoreState.Applied applied = apply(c);
    assertThat(applied.reply().hasOk()).as("acquire reply: %s", applied.reply()).isTrue();
    return AcquireResponse.parseFrom(applied.reply().getOk());
  }

  @Test
  void sessionsGrantedInOneEntryGetDistinctIncreasingIdsThatSurviveASnapshot() throws IOException {
    long single = grant(10_000); // an entry of its own: its index, as before batches
    assertThat(single).isEqualTo(index);
    // Three grants applied at one log index, as a batch entry applies them.
    long at = ++index;
    long[] ids = new long[3];
    for (int i = 0; i < 3; i++) {
      Command c = Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(10_000)).build();
      ids[i] = GrantResponse.parseFrom(state.apply(at, term, c).reply().getOk()).getSessionId();
    }
    assertThat(ids).containsExactly(at, at + 1, at + 2);

    // The next entry's index is below the last id handed out: the id still grows.
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    state.writeSnapshot(out);
    CoreState restored = new CoreState();
    restored.readSnapshot(new ByteArrayInputStream(out.toByteArray()));
    Command next = Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(10_000)).build();
    long afterRestore = GrantResponse.parseFrom(restored.apply(at + 1, term, next).reply().getOk()).getSessionId();
    assertThat(afterRestore).isEqualTo(at + 3);
  }

  @Test
  void oneHolderAtATimeAndTokensGrowPerTenure() throws IOException {
    long s1 = grant(10_000);
    long s2 = grant(10_000);
    AcquireResponse a = acquire("job", "a#1", 1, s1);
    AcquireResponse b = acquire("job", "b#1", 1, s2);
    assertThat(a.getAcquired()).isTrue();
    assertThat(b.getAcquired()).isFalse();
    assertThat(b.getHolder()).isEqualTo("a#1");

    Command release = Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setToken(a.getToken())).build();
    assertThat(ReleaseResponse.parseFrom(apply(release).reply().getOk()).getReleased()).isTrue();
    AcquireResponse b2 = acquire("job", "b#1", 2, s2);
    assertThat(b2.getAcquired()).isTrue();
    assertThat(b2.getToken()).isGreaterThan(a.getToken());
  }

  @Test
  void aStaleReleaseLeavesTheNewerTenureAlone() throws IOException {
    long s = grant(10_000);
    AcquireResponse first = acquire("job", "a#1", 1, s);
    AcquireResponse second = acquire("job", "a#1", 2, s); // the holder gave the first one up
    assertThat(second.getToken()).isGreaterThan(first.getToken());
    Command late = Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setToken(first.getToken())).build();
    assertThat(ReleaseResponse.parseFrom(apply(late).reply().getOk()).getReleased()).isFalse();
    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvs(0).getCreateRevision())
        .isEqualTo(second.getToken());
  }

  @Test
  void aRetriedCallIsAnsweredFromTheFirstReplyWithoutApplyingAgain() throws IOException {
    long s = grant(10_000);
    CallId call = call();
    AcquireResponse first = acquire(call, "job", "a#1", 1, s);
    long revision = state.revision();
    AcquireResponse retried = acquire(call, "job", "a#1", 1, s);
    assertThat(retried).isEqualTo(first);
    assertThat(state.revision()).isEqualTo(revision);
  }

  @Test
  void aReplacedTenureIsDeletedAndTheNewOnePutAtOneRevisionDeleteFirst() throws IOException {
    long s = grant(10_000);
    AcquireResponse first = acquire("job", "a#1", 1, s);
    CoreState.Applied replaced =
        apply(Command.newBuilder().setAcquire(AcquireRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setRequestId(2).setSessionId(s)).build());
    assertThat(replaced.events()).extracting(Event::getType).containsExactly(Event.Type.DELETE, Event.Type.PUT);
    assertThat(replaced.events().get(0).getKv().getCreateRevision()).isEqualTo(first.getToken());
    assertThat(replaced.events()).extracting(e -> e.getKv().getModRevision()).containsOnly(state.revision());
    assertThat(AcquireResponse.parseFrom(replaced.reply().getOk()).getToken()).isEqualTo(state.revision());
  }

  @Test
  void anOlderRequestOfTheSameHolderDoesNotReplaceANewerTenure() throws IOException {
    long s = grant(10_000);
    AcquireResponse newer = acquire("job", "a#1", 5, s);
    AcquireResponse late = acquire("job", "a#1", 4, s);
    assertThat(late.getAcquired()).isFalse();
    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvs(0).getCreateRevision())
        .isEqualTo(newer.getToken());
  }

  @Test
  void expiringASessionDeletesItsKeysAtOneRevisionAndSaysWhy() throws IOException {
    long s = grant(1_000);
    for (String k : new String[] {"a", "b"}) {
      apply(Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey(k).setValue(ByteString.copyFromUtf8("v")).setSessionId(s)).build());
    }
    long before = state.revision();
    CoreState.Applied expired = apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(s).setTerm(term)).build());
    assertThat(expired.change()).isEqualTo(new CoreState.Change.Ended(s));
    assertThat(expired.events()).extracting(Event::getType).containsExactly(Event.Type.DELETE, Event.Type.DELETE);
    assertThat(expired.events()).allSatisfy(e -> {
      assertThat(e.getKv().getModRevision()).isEqualTo(before + 1);
      assertThat(e.getCause()).isEqualTo("session expired");
    });
    assertThat(state.counts().getKeys()).isZero();
    assertThat(state.hasSession(s)).isFalse();
  }

  @Test
  void anExpiryDecidedByADeposedLeaderChangesNothing() throws IOException {
    long s = grant(1_000);
    apply(Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey("a").setValue(ByteString.copyFromUtf8("v")).setSessionId(s)).build());
    long decidedIn = term;
    term++; // a new leader appends the old leader's re-sent decision in its own term
    CoreState.Applied stale = apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(s).setTerm(decidedIn)).build());
    assertThat(stale.events()).isEmpty();
    assertThat(state.hasSession(s)).isTrue();
    assertThat(state.counts().getKeys()).isEqualTo(1);
  }

  @Test
  void aRetriedAcquireThroughAnotherSessionMovesTheKeyKeepingItsToken() throws IOException {
    long first = grant(10_000);
    long second = grant(10_000);
    AcquireResponse a = acquire("job", "a#1", 3, first);
    AcquireResponse retried = acquire("job", "a#1", 3, second);
    assertThat(retried.getToken()).isEqualTo(a.getToken());
    apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(first).setTerm(term)).build());
    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvsList())
        .as("the key lives with the session the holder now renews")
        .hasSize(1);
  }

  @Test
  void writesToAMissingSessionAreRefusedAndChangeNothing() throws IOException {
    long revision = state.revision();
    CoreState.Applied applied =
        apply(Command.newBuilder().setAcquire(AcquireRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setRequestId(1).setSessionId(99)).build());
    assertThat(applied.reply().getFailure().getCode()).isEqualTo(Failure.Code.SESSION_NOT_FOUND);
    assertThat(state.revision()).isEqualTo(revision);
    assertThat(state.counts().getKeys()).isZero();
  }

  @Test
  void aSnapshotRestoresTheSameStateAndTheSameRetryAnswers() throws IOException {
    long s = grant(10_000);
    CallId call = call();
    AcquireResponse first = acquire(call, "job", "a#1", 1, s);
    apply(Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey("k").setValue(ByteString.copyFromUtf8("v"))).build());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    state.writeSnapshot(out);

    CoreState restored = new CoreState();
    restored.readSnapshot(new ByteArrayInputStream(out.toByteArray()));
    assertThat(restored.counts()).isEqualTo(state.counts());
    assertThat(restored.get(GetRequest.newBuilder().setKey("").setPrefix(true).build()))
        .isEqualTo(state.get(GetRequest.newBuilder().setKey("").setPrefix(true).build()));
    ByteArrayOutputStream again = new ByteArrayOutputStream();
    restored.writeSnapshot(again);
    assertThat(again.toByteArray()).as("equal states write equal snapshots").isEqualTo(out.toByteArray());
    Command retry =
        Command.newBuilder().setAcquire(AcquireRequest.newBuilder().setCall(call).setName("job").setHolder("a#1").setRequestId(1).setSessionId(s)).build();
    assertThat(AcquireResponse.parseFrom(restored.apply(100, term, retry).reply().getOk())).isEqualTo(first);
  }

  @Test
  void aSnapshotOfAnotherFormatIsRefusedWithAClearMessage() {
    byte[] wrongFormat = {0x4C, 0x48, 0x53, 0x4E, 0, 0, 0, 9};
    assertThatThrownBy(() -> new CoreState().readSnapshot(new ByteArrayInputStream(wrongFormat)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("format 9");
    assertThatThrownBy(() -> new CoreState().readSnapshot(new ByteArrayInputStream(new byte[] {1, 2, 3, 4, 5, 6, 7, 8})))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("not a Leasehold snapshot");
  }
}
