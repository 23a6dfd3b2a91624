package io.leasehold.server.replicated;

import io.leasehold.server.edge.ClientService;
import io.leasehold.server.raft.LeaderRefusals;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokedTenure;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import io.leasehold.server.state.ClientCalls;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Heard;
import io.leasehold.server.state.Quiet;
import io.leasehold.server.state.Reply;
import io.leasehold.server.state.SnapshotBody;
import io.leasehold.server.state.StoredReply;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.List;
import java.nio.ByteBuffer;
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

  private static AcquireRequest acquireRequest(String name, String holder, long requestId, long session) {
    return AcquireRequest.newBuilder().setName(name).setHolder(holder).setRequestId(requestId).setSessionId(session).build();
  }

  /**
   * The leader refuses an acquire from its state (LeaderRefusals) exactly when the log would:
   * every case where the read names a holder, applying the same acquire refuses it for that
   * holder; every case where it does not, applying it grants.
   */
  @Test
  void theLeadersReadRefusesAnAcquireExactlyWhenTheLogWould() throws IOException {
    long sa = grant(10_000);
    long sb = grant(10_000);
    assertThat(state.refusingHolder(acquireRequest("job", "a#1", 1, sa))).as("a free name").isNull();
    long token = acquire("job", "a#1", 1, sa).getToken();

    record Case(String why, AcquireRequest acquire, String refusedFor) {}
    List<Case> cases =
        List.of(
            new Case("another holder", acquireRequest("job", "b#1", 1, sb), "a#1"),
            new Case("the holder's late copy of an older request", acquireRequest("job", "a#1", 0, sa), "a#1"),
            new Case("the holder's retry of the same request", acquireRequest("job", "a#1", 1, sb), null),
            new Case("the holder's new tenure", acquireRequest("job", "a#1", 2, sa), null));
    for (Case c : cases) {
      String read = state.refusingHolder(c.acquire());
      assertThat(read).as(c.why()).isEqualTo(c.refusedFor());
    }
    // Each case, applied on a copy of this state, answers as the read said.
    for (Case c : cases) {
      CoreState copy = copyOf(state);
      AcquireResponse applied =
          AcquireResponse.parseFrom(
              copy.apply(index + 1, term, Command.newBuilder().setAcquire(c.acquire().toBuilder().setCall(call())).build())
                  .reply()
                  .getOk());
      assertThat(applied.getAcquired()).as(c.why()).isEqualTo(c.refusedFor() == null);
      if (c.refusedFor() != null) {
        assertThat(applied.getHolder()).as(c.why()).isEqualTo(c.refusedFor());
      }
    }

    // Revoked by an operator: the tombstone refuses everyone but the holder's newer request.
    delete(CoreState.LEASE_PREFIX + "job");
    assertThat(state.refusingHolder(acquireRequest("job", "b#1", 5, sb))).as("another holder, revoked tenure").isEqualTo("a#1");
    assertThat(state.refusingHolder(acquireRequest("job", "a#1", 1, sa))).as("the revoked request itself").isEqualTo("a#1");
    assertThat(state.refusingHolder(acquireRequest("job", "a#1", 2, sa))).as("the holder asks anew").isNull();
    assertThat(acquire("job", "b#1", 5, sb).getAcquired()).as("the log agrees: refused").isFalse();
    assertThat(acquire("job", "a#1", 2, sa).getToken()).as("the log agrees: a new tenure").isGreaterThan(token);
  }

  private static CoreState copyOf(CoreState original) throws IOException {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    original.writeSnapshot(bytes);
    CoreState copy = new CoreState();
    copy.readSnapshot(new java.io.ByteArrayInputStream(bytes.toByteArray()));
    return copy;
  }

  @Test
  void aCommandOfANewerVersionStopsApplyingInsteadOfBeingSkipped() throws IOException {
    long session = grant(10_000);
    acquire("job", "a#1", 1, session);
    long revision = state.revision();
    // A command kind this version does not know: a field number no Command has, as a newer
    // version's leader would write it during a rolling upgrade, with a stamp that would move the clock.
    Command newer =
        Command.parseFrom(
            Command.newBuilder()
                .setStampMillis(Long.MAX_VALUE / 2)
                .setUnknownFields(
                    com.google.protobuf.UnknownFieldSet.newBuilder()
                        .addField(
                            99, com.google.protobuf.UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("x")).build())
                        .build())
                .build()
                .toByteArray());

    assertThatThrownBy(() -> apply(newer))
        .isInstanceOf(CoreState.NewerCommandException.class)
        .hasMessageContaining("holds a command this version of Leasehold does not know (field [99])")
        .hasMessageContaining("upgrade it");
    assertThat(state.revision()).as("nothing applied").isEqualTo(revision);
    assertThat(state.clockMillis()).as("the clock did not move").isLessThan(Long.MAX_VALUE / 2);
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

  /**
   * The first attempt of an acquire goes out on session S0 and is held up on its way; the client
   * gives up on it, retires S0 and retries the same request on a new session S1, which is applied.
   * The late first copy (a hole in the client's calls, so it executes) must leave the tenure on
   * S1, the session the holder renews: on S0 it would expire with S0 under a live holder.
   */
  @Test
  void aLateCopyOfAnEarlierAttemptDoesNotMoveTheTenureBackToTheSessionItsClientGaveUp() throws IOException {
    long s0 = grant(10_000);
    CallId firstAttempt = call(); // sent on s0, then held up at a follower
    long s1 = grant(10_000);
    AcquireResponse retried = acquire("job", "a#1", 7, s1);
    assertThat(retried.getAcquired()).isTrue();

    AcquireResponse late = acquire(firstAttempt, "job", "a#1", 7, s0);
    assertThat(late.getToken()).as("the same tenure").isEqualTo(retried.getToken());
    KeyValueView key = leaseKey("job");
    assertThat(key.session()).as("the tenure stays on the session its holder renews").isEqualTo(s1);

    apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(s0).setTerm(term)).build());
    assertThat(leaseKey("job")).as("the abandoned session's expiry leaves the live tenure alone").isNotNull();
  }

  /**
   * A client sends the largest batch the core accepts, and its reply is lost; it sends the batch
   * again. Every write of it was applied, so every one must be answered from its reply: refused
   * as too late, the client would take an applied write for one that never happened.
   */
  @Test
  void aWholeBatchSentAgainIsAnsweredFromItsRepliesNotRefusedAsTooLate() {
    int batch = ClientService.MAX_BATCH_OPS;
    List<Command> first = new java.util.ArrayList<>();
    List<CoreState.Applied> firstReplies = new java.util.ArrayList<>();
    for (int i = 0; i < batch; i++) {
      Command put = put(callOf(9, i + 1), "first/" + i, "v");
      first.add(put);
      firstReplies.add(apply(put));
    }
    long revision = state.revision();

    for (int i = 0; i < batch; i++) {
      CoreState.Applied again = apply(first.get(i));
      assertThat(again.reply()).as("write %s of the batch sent again", i).isEqualTo(firstReplies.get(i).reply());
    }
    assertThat(state.revision()).as("nothing applied twice").isEqualTo(revision);
  }

  private CoreState.Applied quietProposing(String clusterId) {
    return apply(Command.newBuilder().setQuiet(Quiet.newBuilder().setTerm(term).setSinceMillis(0).setClusterId(clusterId)).build());
  }

  @Test
  void theFirstProposedClusterIdentityIsTakenAndKeptBySnapshots() throws IOException {
    assertThat(state.clusterId()).isEmpty();
    quietProposing("cluster-a");
    term++;
    quietProposing("cluster-b"); // a later leader's proposal

    assertThat(state.clusterId()).isEqualTo("cluster-a");
    assertThat(copyOf(state).clusterId()).isEqualTo("cluster-a");
  }

  /**
   * A cluster restored from a backup is another cluster: it takes an identity of its own, and
   * until the longest session TTL has passed it grants no name, since a holder of the old cluster
   * (a tenure taken after the backup, so free here) may still be working.
   */
  @Test
  void aRestoredStateTakesANewIdentityAndGrantsNoNameForTheLongestSessionTtl() throws IOException {
    applyAt(1_000, Command.newBuilder().setQuiet(Quiet.newBuilder().setTerm(term).setClusterId("old")).build());
    CallId grantCall = call();
    CoreState.Applied granted =
        applyAt(1_000, Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(grantCall).setOwner("o").setTtlMillis(5_000)).build());
    long session = GrantResponse.parseFrom(granted.reply().getOk()).getSessionId();
    assertThat(GrantResponse.parseFrom(granted.reply().getOk()).getClusterId())
        .as("a grant names the cluster its session is of, before any keep-alive can")
        .isEqualTo("old");
    CoreState restored = copyOf(state); // the backup
    restored.markRestored();
    assertThat(restored.clusterId()).as("not the old cluster's").isEmpty();

    restored.apply(++index, term, Command.newBuilder().setStampMillis(2_000)
        .setQuiet(Quiet.newBuilder().setTerm(term).setClusterId("new")).build());
    assertThat(restored.clusterId()).isEqualTo("new");
    CoreState.Applied grantedAfter = restored.apply(++index, term, Command.newBuilder().setStampMillis(2_000)
        .setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(5_000)).build());
    assertThat(GrantResponse.parseFrom(grantedAfter.reply().getOk()).getClusterId()).isEqualTo("new");
    AcquireRequest acquire = acquireRequest("job", "a#1", 1, session);
    // The applied clock stands still while no entry is applied, and a leader answers refusals
    // from its applied state without an entry: a closed name refused there would stay closed for
    // as long as every contender is refused that way. Only the log, whose entries move the clock,
    // may refuse for this reason.
    assertThat(restored.refusingHolder(acquire)).as("the leader's read, with the names closed").isNull();
    CoreState.Applied refused =
        restored.apply(++index, term, Command.newBuilder().setStampMillis(6_999).setAcquire(acquire.toBuilder().setCall(call())).build());
    assertThat(AcquireResponse.parseFrom(refused.reply().getOk()).getAcquired()).as("4,999 ms after").isFalse();
    assertThat(AcquireResponse.parseFrom(refused.reply().getOk()).getHolder()).contains("before this cluster's restore");
    CoreState.Applied refusedAfterASnapshot = copyOf(restored)
        .apply(index + 1, term, Command.newBuilder().setStampMillis(6_999).setAcquire(acquire.toBuilder().setCall(call())).build());
    assertThat(AcquireResponse.parseFrom(refusedAfterASnapshot.reply().getOk()).getAcquired()).as("kept by snapshots").isFalse();

    CoreState.Applied taken =
        restored.apply(++index, term, Command.newBuilder().setStampMillis(7_000).setAcquire(acquire.toBuilder().setCall(call())).build());
    assertThat(AcquireResponse.parseFrom(taken.reply().getOk()).getAcquired()).as("a TTL after").isTrue();
  }

  /**
   * Anyone can send writes from fresh client ids with a far call id, and each first call used to
   * open a hole for every id below it (a thousand holes): five batches of 1,024 such calls grew
   * three replicas' heaps from 28 MB to 1.4 GB. A first call opens only a few now.
   */
  @Test
  void aFreshClientsFarFirstCallOpensOnlyAFewHoles() throws IOException {
    int clients = ClientService.MAX_BATCH_OPS;
    for (int i = 0; i < clients; i++) {
      apply(Command.newBuilder()
          .setRevoke(RevokeRequest.newBuilder().setCall(callOf(1_000 + i, 1L << 40)).setSessionId(999_999).setHolderClosing(true))
          .build());
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    state.writeSnapshot(bytes);
    java.io.DataInputStream in = new java.io.DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
    in.readInt(); // magic
    in.readInt(); // format
    SnapshotBody body = SnapshotBody.parseDelimitedFrom(in);
    long holes = body.getClientsList().stream().mapToLong(ClientCalls::getHolesCount).sum();
    assertThat(holes).as("holes kept for %d first calls", clients).isLessThanOrEqualTo((long) clients * CallDedup.FIRST_CALL_HOLES);
    // The far call itself is still applied once: a copy of it is answered, not applied again.
    CoreState.Applied again = apply(Command.newBuilder()
        .setRevoke(RevokeRequest.newBuilder().setCall(callOf(1_000, 1L << 40)).setSessionId(999_999).setHolderClosing(true))
        .build());
    assertThat(again.events()).isEmpty();
  }

  @Test
  void ownersAndHoldersAreBoundedAtTheEdgeNamingTheField() {
    String huge = "o".repeat(3 * 1024 * 1024);
    Command grant = Command.newBuilder().setGrant(GrantRequest.newBuilder().setOwner(huge).setTtlMillis(86_400_000L)).build();
    assertThat(ClientService.problem(grant)).isEqualTo("owner must be at most 256 characters; was " + huge.length());
    Command acquire = Command.newBuilder().setAcquire(acquireRequest("job", "h".repeat(321), 1, 1)).build();
    assertThat(ClientService.problem(acquire)).isEqualTo("holder must be at most 320 characters; was 321");
    Command fine = Command.newBuilder().setGrant(GrantRequest.newBuilder().setOwner("o".repeat(256)).setTtlMillis(10_000)).build();
    assertThat(ClientService.problem(fine)).isNull();
  }

  private record KeyValueView(long session, long token) {}

  private KeyValueView leaseKey(String name) {
    var kvs = state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + name).build()).getKvsList();
    return kvs.isEmpty() ? null : new KeyValueView(kvs.get(0).getSessionId(), kvs.get(0).getCreateRevision());
  }

  private CallId callOf(long client, long id) {
    return CallId.newBuilder().setClientIdHigh(client).setClientIdLow(client).setCallId(id).build();
  }

  private Command put(CallId call, String key, String value) {
    return Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call).setKey(key).setValue(ByteString.copyFromUtf8(value))).build();
  }

  private String valueOf(String key) {
    return state.get(GetRequest.newBuilder().setKey(key).build()).getKvs(0).getValue().toStringUtf8();
  }

  @Test
  void aLateCopyOfAnAcquireAfterItsReleaseMakesNoTenureEvenAfterManyOtherCalls() throws IOException {
    long s = grant(10_000);
    CallId acquireCall = call();
    Command acquire =
        Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(acquireCall).setName("job").setHolder("a#1").setRequestId(1).setSessionId(s))
            .build();
    AcquireResponse first = AcquireResponse.parseFrom(apply(acquire).reply().getOk());
    assertThat(first.getAcquired()).isTrue();
    Command release =
        Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setToken(first.getToken())).build();
    assertThat(ReleaseResponse.parseFrom(apply(release).reply().getOk()).getReleased()).isTrue();
    for (int i = 0; i < 100; i++) {
      apply(put(call(), "other/" + i, "v")); // the same client goes on working
    }

    // A copy of the acquire that a follower forwarded long ago reaches the leader only now.
    CoreState.Applied late = apply(acquire);

    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvsList())
        .as("a released lease must not be taken again by a late copy of the acquire that took it (reply: %s)", late.reply())
        .isEmpty();
    assertThat(late.events()).isEmpty();
  }

  @Test
  void aLatePutDoesNotOverwriteANewerAcknowledgedPutEvenAfterManyOtherCalls() {
    CallId firstPut = callOf(1, 1);
    apply(put(firstPut, "config", "old"));
    for (int i = 2; i <= 100; i++) {
      apply(put(callOf(1, i), "other/" + i, "v"));
    }
    apply(put(callOf(2, 1), "config", "new")); // another client's write, acknowledged

    CoreState.Applied late = apply(put(firstPut, "config", "old"));

    assertThat(valueOf("config")).as("a late copy of an applied put overwrote a newer write (reply: %s)", late.reply()).isEqualTo("new");
    assertThat(late.events()).isEmpty();
  }

  private CoreState.Applied applyAt(long stampMillis, Command command) {
    return apply(command.toBuilder().setStampMillis(stampMillis).build());
  }

  private boolean exists(String key) {
    return !state.get(GetRequest.newBuilder().setKey(key).build()).getKvsList().isEmpty();
  }

  @Test
  void aCopyThatReachesTheLogLaterThanACallMayTakeIsRefusedAndAFreshCopyApplies() {
    Command put = put(callOf(1, 1), "k", "v");
    CoreState.Applied late =
        applyAt(1_000 + CoreState.MAX_CALL_DELAY_MILLIS + 1, put.toBuilder().setReceivedMillis(1_000).build());
    assertThat(late.reply().getFailure().getCode()).isEqualTo(Failure.Code.TOO_LATE);
    assertThat(late.reply().getFailure().getMessage()).contains("later than the " + CoreState.MAX_CALL_DELAY_MILLIS + " ms");
    assertThat(exists("k")).isFalse();

    long now = 1_000 + CoreState.MAX_CALL_DELAY_MILLIS + 2;
    CoreState.Applied retried = applyAt(now, put.toBuilder().setReceivedMillis(now - 10).build());
    assertThat(retried.reply().hasOk()).isTrue();
    assertThat(exists("k")).isTrue();
  }

  @Test
  void aCallOvertakenByLaterCallsOfItsClientIsAppliedOnceWhenItArrives() {
    apply(put(callOf(1, 1), "a", "1"));
    apply(put(callOf(1, 3), "c", "3"));
    assertThat(apply(put(callOf(1, 2), "b", "2")).events()).as("call 2, overtaken by call 3, applies").hasSize(1);
    long revision = state.revision();
    int later = CoreState.REPLIES_KEPT_PER_CLIENT + 32;
    for (int i = 4; i < 4 + later; i++) {
      apply(put(callOf(1, i), "other/" + i, "v"));
    }
    CoreState.Applied again = apply(put(callOf(1, 2), "b", "2"));
    assertThat(again.reply().getFailure().getCode()).as("a copy of call 2 after its reply was dropped").isEqualTo(Failure.Code.TOO_LATE);
    assertThat(again.events()).isEmpty();
    assertThat(state.revision()).isEqualTo(revision + later);
  }

  @Test
  void aCallOvertakenLongerThanTheWindowIsRefusedWhenItArrives() {
    applyAt(0, put(callOf(1, 2), "b", "2")); // call 1 is still on its way
    applyAt(CallDedup.DEDUP_WINDOW_MILLIS + 1, put(callOf(2, 1), "x", "1")); // cluster time moves on
    CoreState.Applied late = applyAt(CallDedup.DEDUP_WINDOW_MILLIS + 2, put(callOf(1, 1), "a", "1"));
    assertThat(late.reply().getFailure().getCode()).isEqualTo(Failure.Code.TOO_LATE);
    assertThat(exists("a")).isFalse();
  }

  @Test
  void aClientKeepsAtMostSoManyOpenCallsAndOlderOnesAreRefused() {
    long far = 10_000;
    apply(put(callOf(1, 1), "first", "v")); // a client the state knows
    apply(put(callOf(1, far), "far", "v"));
    assertThat(apply(put(callOf(1, far - CallDedup.MAX_HOLES_PER_CLIENT), "open", "v")).reply().hasOk()).isTrue();
    CoreState.Applied tooOld = apply(put(callOf(1, far - CallDedup.MAX_HOLES_PER_CLIENT - 1), "old", "v"));
    assertThat(tooOld.reply().getFailure().getCode()).isEqualTo(Failure.Code.TOO_LATE);
    assertThat(exists("old")).isFalse();
  }

  @Test
  void aQuietMarkAppliesInItsOwnTermOnlyAndNotToASessionHeardSince() throws IOException {
    long heardFirst = grant(10_000);
    long quiet = grant(10_000);
    long grantedLater = grant(10_000);
    applyAt(100, Command.newBuilder().setHeard(Heard.newBuilder().addSessionIds(heardFirst)).build());
    // A mark decided at cluster time 100 by the leader of the term, for sessions up to `quiet`.
    Quiet mark = Quiet.newBuilder().setTerm(term).setSinceMillis(100).setMaxSessionId(quiet).build();
    applyAt(101, Command.newBuilder().setQuiet(mark.toBuilder().setTerm(term - 1)).build());
    assertThat(state.hasQuietSessions()).as("a mark of an earlier term").isFalse();

    applyAt(101, Command.newBuilder().setQuiet(mark).build());

    assertThat(state.quietSince()).as("quiet sessions").containsExactly(java.util.Map.entry(quiet, 100L));
    assertThat(state.sessionStatus(heardFirst)).isEqualTo(CoreState.SessionStatus.HEARD);
    assertThat(state.sessionStatus(grantedLater)).isEqualTo(CoreState.SessionStatus.HEARD);
    applyAt(102, Command.newBuilder().setHeard(Heard.newBuilder().addSessionIds(quiet)).build());
    assertThat(state.hasQuietSessions()).isFalse();
  }

  @Test
  void aSnapshotOfTheOldFormatIsReadAndItsCallsAreNotAppliedAgain() throws IOException {
    CallId call = callOf(1, 7);
    Reply reply = Reply.newBuilder().setOk(ByteString.copyFromUtf8("first answer")).build();
    SnapshotBody body =
        SnapshotBody.newBuilder()
            .setRevision(3)
            .addClients(
                ClientCalls.newBuilder()
                    .setClientIdHigh(1)
                    .setClientIdLow(1)
                    .setLastIndex(5)
                    .addReplies(StoredReply.newBuilder().setCallId(7).setReply(reply)))
            .build();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    java.io.DataOutputStream data = new java.io.DataOutputStream(out);
    data.writeInt(0x4C48534E);
    data.writeInt(SnapshotCodec.SNAPSHOT_FORMAT_1);
    body.writeDelimitedTo(data);
    data.flush();

    CoreState old = new CoreState();
    old.readSnapshot(new ByteArrayInputStream(out.toByteArray()));

    assertThat(old.revision()).isEqualTo(3);
    assertThat(old.apply(10, term, put(call, "k", "v")).reply()).isEqualTo(reply);
    assertThat(old.apply(11, term, put(callOf(1, 6), "k", "v")).reply().getFailure().getCode()).isEqualTo(Failure.Code.TOO_LATE);
    assertThat(old.apply(12, term, put(callOf(1, 8), "k", "v")).reply().hasOk()).isTrue();
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
    // Cluster time, a quiet session, a call still open (5 overtaken by 6), a session heard.
    long quietSession = grant(10_000);
    applyAt(500, put(callOf(9, 6), "later", "v"));
    applyAt(600, Command.newBuilder().setQuiet(Quiet.newBuilder().setTerm(term).setSinceMillis(550).setMaxSessionId(quietSession)).build());
    applyAt(700, Command.newBuilder().setHeard(Heard.newBuilder().addSessionIds(s)).build());
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
    assertThat(restored.clockMillis()).isEqualTo(700);
    assertThat(restored.quietSince()).containsExactly(java.util.Map.entry(quietSession, 550L));
    assertThat(restored.apply(101, term, put(callOf(9, 5), "open", "v")).reply().hasOk()).as("the open call 5").isTrue();
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

  // ---- an operator's revocation ----

  private CoreState.Applied delete(String key) {
    return apply(Command.newBuilder().setDelete(DeleteRequest.newBuilder().setCall(call()).setKey(key)).build());
  }

  private boolean release(String name, String holder, long token) throws IOException {
    Command c = Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName(name).setHolder(holder).setToken(token)).build();
    return ReleaseResponse.parseFrom(apply(c).reply().getOk()).getReleased();
  }

  private KeepAliveResponse keepAlive(long session) {
    KeepAliveResponse.Builder response = KeepAliveResponse.newBuilder();
    if (state.keepAlive(session, "", response) != CoreState.SessionStatus.GONE) {
      response.addAlive(session);
    } else {
      response.addGone(session);
    }
    return response.build();
  }

  private static RevokedTenure revoked(long session, String name, long token) {
    return RevokedTenure.newBuilder().setSessionId(session).setName(name).setToken(token).build();
  }

  @Test
  void anOperatorsDeleteOfAHeldLeaseBlocksTheNameUntilItsHolderReleasesThatTenure() throws IOException {
    long sa = grant(10_000);
    long sb = grant(10_000);
    AcquireResponse a = acquire("job", "a#1", 1, sa);

    CoreState.Applied deleted = delete(CoreState.LEASE_PREFIX + "job");

    DeleteResponse response = DeleteResponse.parseFrom(deleted.reply().getOk());
    assertThat(response.getDeleted()).isTrue();
    assertThat(response.getPrevKv().getValue().toStringUtf8()).as("who held it").isEqualTo("a#1");
    assertThat(response.getPrevKv().getCreateRevision()).as("with which token").isEqualTo(a.getToken());
    assertThat(deleted.events()).singleElement().satisfies(e -> {
      assertThat(e.getType()).isEqualTo(Event.Type.DELETE);
      assertThat(e.getCause()).isEqualTo(io.leasehold.core.proto.DeleteCauses.REVOKED_BY_OPERATOR);
    });
    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvsList()).isEmpty();
    assertThat(state.counts().getHeldLeases()).isZero();
    AcquireResponse b = acquire("job", "b#1", 1, sb);
    assertThat(b.getAcquired()).as("another holder's acquire while the holder may still work").isFalse();
    assertThat(b.getHolder()).isEqualTo("a#1");
    assertThat(acquire("job", "a#1", 1, sa).getAcquired()).as("a late copy of the revoked tenure's acquire").isFalse();
    assertThat(keepAlive(sa).getAliveList()).containsExactly(sa);
    assertThat(keepAlive(sa).getRevokedList()).containsExactly(revoked(sa, "job", a.getToken()));
    assertThat(keepAlive(sb).getRevokedList()).isEmpty();
    assertThat(DeleteResponse.parseFrom(delete(CoreState.LEASE_PREFIX + "job").reply().getOk()).getDeleted())
        .as("a second delete finds nothing")
        .isFalse();

    assertThat(release("job", "b#1", a.getToken())).as("another holder cannot end the tombstone").isFalse();
    assertThat(release("job", "a#1", a.getToken())).as("the holder says it stopped").isTrue();

    assertThat(keepAlive(sa).getRevokedList()).isEmpty();
    AcquireResponse b2 = acquire("job", "b#1", 2, sb);
    assertThat(b2.getAcquired()).isTrue();
    assertThat(b2.getToken()).isGreaterThan(a.getToken());
  }

  @Test
  void aRevokedTenureBlocksItsNameUntilItsSessionExpiresIfTheHolderNeverAnswers() throws IOException {
    long sa = grant(10_000);
    long sb = grant(10_000);
    acquire("job", "a#1", 1, sa);
    delete(CoreState.LEASE_PREFIX + "job");
    assertThat(acquire("job", "b#1", 1, sb).getAcquired()).isFalse();

    apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(sa).setTerm(term)).build());

    assertThat(acquire("job", "b#1", 2, sb).getAcquired()).isTrue();
  }

  @Test
  void theHolderOfARevokedTenureAskingAnewGetsANewTenure() throws IOException {
    long sa = grant(10_000);
    AcquireResponse first = acquire("job", "a#1", 1, sa);
    delete(CoreState.LEASE_PREFIX + "job");

    AcquireResponse again = acquire("job", "a#1", 2, sa);

    assertThat(again.getAcquired()).isTrue();
    assertThat(again.getToken()).isGreaterThan(first.getToken());
    assertThat(keepAlive(sa).getRevokedList()).isEmpty();
    assertThat(release("job", "a#1", first.getToken())).as("a late release of the revoked tenure").isFalse();
    assertThat(state.counts().getHeldLeases()).isEqualTo(1);
  }

  @Test
  void anOperatorsRevokeOfASessionFreesNothingUntilItExpires() throws IOException {
    long sa = grant(10_000);
    long sb = grant(10_000);
    acquire("job", "a#1", 1, sa);
    Command revoke = Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(sa)).build();

    CoreState.Applied applied = apply(revoke);

    assertThat(applied.events()).isEmpty();
    assertThat(applied.change()).isEqualTo(new CoreState.Change.None());
    assertThat(keepAlive(sa).getGoneList()).as("no longer kept alive").containsExactly(sa);
    assertThat(state.counts().getHeldLeases()).isEqualTo(1);
    assertThat(acquire("job", "b#1", 1, sb).getAcquired()).isFalse();
    CoreState.Applied attach =
        apply(Command.newBuilder().setAcquire(AcquireRequest.newBuilder().setCall(call()).setName("other").setHolder("a#1").setRequestId(2).setSessionId(sa)).build());
    assertThat(attach.reply().getFailure().getCode()).as("nothing new attaches to it").isEqualTo(Failure.Code.SESSION_NOT_FOUND);

    apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(sa).setTerm(term)).build());
    assertThat(acquire("job", "b#1", 2, sb).getAcquired()).isTrue();
  }

  @Test
  void theHoldersOwnRevokeOnCloseEndsTheSessionAtOnce() throws IOException {
    long sa = grant(10_000);
    acquire("job", "a#1", 1, sa);
    Command revoke =
        Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(sa).setHolderClosing(true)).build();

    CoreState.Applied applied = apply(revoke);

    assertThat(applied.change()).isEqualTo(new CoreState.Change.Ended(sa));
    assertThat(applied.events()).extracting(Event::getCause).containsExactly(io.leasehold.core.proto.DeleteCauses.SESSION_CLOSED);
    assertThat(state.hasSession(sa)).isFalse();
  }

  @Test
  void aSnapshotKeepsTombstonesAndRevokedSessions() throws IOException {
    long sa = grant(10_000);
    long sb = grant(10_000);
    long sc = grant(10_000);
    AcquireResponse a = acquire("job", "a#1", 1, sa);
    delete(CoreState.LEASE_PREFIX + "job");
    apply(Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(sc)).build());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    state.writeSnapshot(out);

    CoreState restored = new CoreState();
    restored.readSnapshot(new ByteArrayInputStream(out.toByteArray()));

    ByteArrayOutputStream again = new ByteArrayOutputStream();
    restored.writeSnapshot(again);
    assertThat(again.toByteArray()).isEqualTo(out.toByteArray());
    KeepAliveResponse.Builder ofA = KeepAliveResponse.newBuilder();
    assertThat(restored.keepAlive(sa, "", ofA)).isNotEqualTo(CoreState.SessionStatus.GONE);
    assertThat(ofA.getRevokedList()).containsExactly(revoked(sa, "job", a.getToken()));
    assertThat(restored.keepAlive(sc, "", KeepAliveResponse.newBuilder())).as("the revoked session").isEqualTo(CoreState.SessionStatus.GONE);
    Command b = Command.newBuilder().setAcquire(AcquireRequest.newBuilder().setCall(call()).setName("job").setHolder("b#1").setRequestId(1).setSessionId(sb)).build();
    assertThat(AcquireResponse.parseFrom(restored.apply(1000, term, b).reply().getOk()).getAcquired()).isFalse();
  }

  @Test
  void aSnapshotOfFormat1IsStillRead() throws IOException {
    long s = grant(10_000);
    acquire("job", "a#1", 1, s);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    state.writeSnapshot(out);
    byte[] format1 = out.toByteArray();
    ByteBuffer.wrap(format1).putInt(4, 1); // a format-1 body is a format-2 body without the new fields

    CoreState restored = new CoreState();
    restored.readSnapshot(new ByteArrayInputStream(format1));

    assertThat(restored.counts()).isEqualTo(state.counts());
  }

  // ---- keys attached to a tenure ----

  private io.leasehold.core.proto.PutResponse attach(String name, String holder, long token, String key, String value)
      throws IOException {
    Command c =
        Command.newBuilder()
            .setPut(
                PutRequest.newBuilder()
                    .setCall(call())
                    .setKey(key)
                    .setValue(ByteString.copyFromUtf8(value))
                    .setTenure(io.leasehold.core.proto.Tenure.newBuilder().setName(name).setHolder(holder).setToken(token)))
            .build();
    return io.leasehold.core.proto.PutResponse.parseFrom(apply(c).reply().getOk());
  }

  private static String attachedKey(String name, String key) {
    return CoreState.ATTACHED_PREFIX + name + "/" + key;
  }

  @Test
  void attachedKeysAreWrittenOnlyUnderTheirTenureAndDeletedWithItAtTheSameRevision() throws IOException {
    long s = grant(10_000);
    long token = acquire("job", "a#1", 1, s).getToken();
    long other = acquire("job/sub", "b#1", 1, s).getToken(); // a name that continues with "/"
    assertThat(attach("job/sub", "b#1", other, "x", "kept").hasKv()).isTrue();

    assertThat(attach("job", "a#1", token, "address", "10.0.0.1").getKv().getKey()).isEqualTo(attachedKey("job", "address"));
    assertThat(attach("job", "b#1", token, "k", "v").getTenureEnded()).as("another holder's write").isTrue();
    assertThat(attach("job", "a#1", token + 100, "k", "v").getTenureEnded()).as("another tenure's write").isTrue();

    CoreState.Applied released =
        apply(Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("a#1").setToken(token)).build());
    assertThat(released.events()).extracting(e -> e.getKv().getKey())
        .containsExactly(CoreState.LEASE_PREFIX + "job", attachedKey("job", "address"));
    assertThat(released.events()).extracting(e -> e.getKv().getModRevision()).as("one revision").containsOnly(released.events().get(0).getKv().getModRevision());
    assertThat(exists(attachedKey("job", "address"))).isFalse();
    assertThat(exists(attachedKey("job/sub", "x"))).as("the key of lease 'job/sub'").isTrue();

    assertThat(attach("job", "a#1", token, "late", "v").getTenureEnded()).as("a write after the release").isTrue();
    assertThat(exists(attachedKey("job", "late"))).isFalse();

    CoreState.Applied expired = apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(s).setTerm(term)).build());
    assertThat(expired.events()).extracting(e -> e.getKv().getKey())
        .contains(CoreState.LEASE_PREFIX + "job/sub", attachedKey("job/sub", "x"));
    assertThat(exists(attachedKey("job/sub", "x"))).as("after the session expired").isFalse();
  }
}
