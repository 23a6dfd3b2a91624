package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantRequest;
import io.leasehold.core.proto.AclRevokeRequest;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeepAliveResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.RevokeResponse;
import io.leasehold.core.proto.Tenure;
import io.leasehold.server.state.AclInit;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Failure;
import io.leasehold.server.state.Reply;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * Access control and session ownership as the log applies them: deterministic, nothing changed by
 * a refusal, kept in snapshots (a new section, format 3 only when used), sessions per identity.
 */
class CoreStateAclTest {

  private static final String ROOT = "CN=admin";
  private static final String ALICE = "CN=alice";
  private static final String BOB = "CN=bob";

  private final CoreState state = new CoreState();
  private long index;
  private long calls;

  private Reply apply(String identity, Command.Builder command) {
    return state.apply(++index, 1, command.setIdentity(identity).build()).reply();
  }

  private CallId call() {
    return CallId.newBuilder().setClientIdHigh(7).setClientIdLow(7).setCallId(++calls).build();
  }

  private long grant(String identity) throws IOException {
    Reply reply = apply(identity, Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(10_000)));
    assertThat(reply.hasOk()).as("grant: %s", reply).isTrue();
    return GrantResponse.parseFrom(reply.getOk()).getSessionId();
  }

  private Reply grantLimited(String identity, int limit) {
    return apply(
        identity,
        Command.newBuilder()
            .setGrant(GrantRequest.newBuilder().setCall(call()).setOwner("o").setTtlMillis(10_000))
            .setMaxSessionsPerIdentity(limit));
  }

  private Reply acquire(String identity, String name, String holder, long session) {
    return apply(
        identity,
        Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(call()).setName(name).setHolder(holder).setRequestId(1).setSessionId(session)));
  }

  private static AclEntry entry(String identity, AclRight right, String prefix) {
    return AclEntry.newBuilder().setIdentity(identity).setRight(right).setPrefix(prefix).build();
  }

  private Reply aclGrant(String by, AclEntry entry) {
    return apply(by, Command.newBuilder().setAclGrant(AclGrantRequest.newBuilder().setCall(call()).setEntry(entry)));
  }

  private Reply aclRevoke(String by, AclEntry entry) {
    return apply(by, Command.newBuilder().setAclRevoke(AclRevokeRequest.newBuilder().setCall(call()).setEntry(entry)));
  }

  private void init() {
    apply("", Command.newBuilder().setAclInit(AclInit.newBuilder().setRootIdentity(ROOT)));
  }

  private static void assertDenied(Reply reply, String... mentions) {
    assertThat(reply.hasFailure()).as("%s", reply).isTrue();
    assertThat(reply.getFailure().getCode()).isEqualTo(Failure.Code.PERMISSION_DENIED);
    assertThat(reply.getFailure().getMessage()).contains(mentions);
  }

  private static byte[] snapshot(CoreState s) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    s.writeSnapshot(out);
    return out.toByteArray();
  }

  private static int formatOf(byte[] snapshot) throws IOException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(snapshot));
    in.readInt();
    return in.readInt();
  }

  @Test
  void theFirstRootAppliedWinsAndOnlyAdminsChangeTheAcl() {
    assertThat(aclGrant(ROOT, entry(ALICE, AclRight.ACL_RIGHT_READ, "a/")).getFailure().getMessage())
        .as("access control off")
        .contains("access control is off");
    init();
    apply("", Command.newBuilder().setAclInit(AclInit.newBuilder().setRootIdentity("CN=other")));
    assertThat(state.acl().root()).isEqualTo(ROOT);

    assertDenied(aclGrant(ALICE, entry(ALICE, AclRight.ACL_RIGHT_ADMIN, "")), "CN=alice", "admin");
    assertThat(state.acl().entries()).as("nothing changed").isEmpty();
    assertThat(aclGrant(ROOT, entry(ALICE, AclRight.ACL_RIGHT_ADMIN, "")).hasOk()).isTrue();
    assertThat(aclGrant(ALICE, entry(BOB, AclRight.ACL_RIGHT_LEASE, "jobs/")).hasOk()).as("an admin grants").isTrue();
    assertThat(state.acl().allows(BOB, AclRight.ACL_RIGHT_LEASE, "jobs/nightly")).isTrue();
    assertThat(state.acl().allows(BOB, AclRight.ACL_RIGHT_LEASE, "other")).isFalse();
    assertThat(state.acl().allows(BOB, AclRight.ACL_RIGHT_READ, "jobs/nightly")).as("another right").isFalse();

    assertThat(aclRevoke(ALICE, entry(BOB, AclRight.ACL_RIGHT_LEASE, "jobs/")).hasOk()).isTrue();
    assertThat(state.acl().allows(BOB, AclRight.ACL_RIGHT_LEASE, "jobs/nightly")).as("revoked").isFalse();
  }

  @Test
  void theRootCannotBeRevoked() {
    init();
    Reply reply = aclRevoke(ROOT, entry(ROOT, AclRight.ACL_RIGHT_ADMIN, ""));
    assertThat(reply.getFailure().getCode()).isEqualTo(Failure.Code.FAILED_PRECONDITION);
    assertThat(reply.getFailure().getMessage()).contains("root identity \"CN=admin\"", "cannot be revoked");
    assertThat(state.acl().allows(ROOT, AclRight.ACL_RIGHT_ADMIN, "")).isTrue();

    // Nor can an entry for the root be granted: it would be one that no revoke could remove.
    Reply granted = aclGrant(ROOT, entry(ROOT, AclRight.ACL_RIGHT_READ, "x/"));
    assertThat(granted.getFailure().getCode()).as("%s", granted).isEqualTo(Failure.Code.FAILED_PRECONDITION);
    assertThat(granted.getFailure().getMessage()).contains("root identity \"CN=admin\"", "has every right");
    assertThat(state.acl().entries()).isEmpty();
  }

  @Test
  void anEntryWithAnUnknownRightFromTheLogOrASnapshotIsRefused() throws IOException {
    init();
    AclEntry bad = AclEntry.newBuilder().setIdentity(ALICE).setRightValue(99).build();
    assertThat(aclGrant(ROOT, bad).getFailure().getMessage()).contains("right must be one of lease, read, write, watch, admin");
    assertThat(state.acl().entries()).isEmpty();

    byte[] good = snapshot(state);
    io.leasehold.server.state.SnapshotBody body =
        io.leasehold.server.state.SnapshotBody.parseDelimitedFrom(new ByteArrayInputStream(good, 8, good.length - 8));
    ByteArrayOutputStream corrupt = new ByteArrayOutputStream();
    new java.io.DataOutputStream(corrupt).writeInt(0x4C48534E);
    new java.io.DataOutputStream(corrupt).writeInt(SnapshotCodec.SNAPSHOT_FORMAT_ACL);
    body.toBuilder().addAclEntries(bad).build().writeDelimitedTo(corrupt);
    CoreState target = new CoreState();
    assertThatThrownBy(() -> target.readSnapshot(new ByteArrayInputStream(corrupt.toByteArray())))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("ACL entry");
    assertThat(target.acl().enabled()).as("nothing loaded").isFalse();
  }

  @Test
  void theAclAndSessionOwnersSurviveASnapshotWhichIsFormat3OnlyWhenTheyExist() throws IOException {
    grant("");
    assertThat(formatOf(snapshot(state))).as("no ACL, no identities: readable by older nodes").isEqualTo(SnapshotCodec.SNAPSHOT_FORMAT);

    init();
    aclGrant(ROOT, entry(ALICE, AclRight.ACL_RIGHT_LEASE, "jobs/"));
    long alices = grant(ALICE);
    byte[] bytes = snapshot(state);
    assertThat(formatOf(bytes)).isEqualTo(SnapshotCodec.SNAPSHOT_FORMAT_ACL);

    CoreState restored = new CoreState();
    restored.readSnapshot(new ByteArrayInputStream(bytes));
    assertThat(restored.acl().root()).isEqualTo(ROOT);
    assertThat(restored.acl().entries()).containsExactly(entry(ALICE, AclRight.ACL_RIGHT_LEASE, "jobs/"));
    assertThat(restored.sessionUsableBy(alices, ALICE)).isTrue();
    assertThat(restored.sessionUsableBy(alices, BOB)).as("still alice's only").isFalse();
    assertThat(restored.sessionsOf(ALICE)).isEqualTo(1);
    assertThat(snapshot(restored)).as("the same bytes again").isEqualTo(bytes);
  }

  @Test
  void anotherIdentityCannotUseReleaseCloseOrKeepAliveASessionAndNothingChanges() throws IOException {
    long alices = grant(ALICE);
    AcquireResponse held = AcquireResponse.parseFrom(acquire(ALICE, "job", "alice#1", alices).getOk());
    long revision = state.revision();

    assertDenied(acquire(BOB, "other", "bob#1", alices), "CN=bob", "session " + alices, "another client identity");
    assertDenied(
        apply(BOB, Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey("k").setValue(ByteString.EMPTY).setSessionId(alices))),
        "CN=bob");
    assertDenied(
        apply(BOB, Command.newBuilder().setCompareAndSet(CompareAndSetRequest.newBuilder().setCall(call()).setKey("k").setSessionId(alices))),
        "CN=bob");
    assertDenied(
        apply(BOB, Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey("a").setValue(ByteString.EMPTY)
            .setTenure(Tenure.newBuilder().setName("job").setHolder("alice#1").setToken(held.getToken())))),
        "CN=bob");
    assertDenied(
        apply(BOB, Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("alice#1").setToken(held.getToken()))),
        "CN=bob", "release");
    assertDenied(
        apply(BOB, Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(alices).setHolderClosing(true))),
        "CN=bob", "close");
    assertDenied(
        apply(BOB, Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(alices))),
        "CN=bob", "admin");
    KeepAliveResponse.Builder keepAlive = KeepAliveResponse.newBuilder();
    assertThat(state.keepAlive(alices, BOB, keepAlive)).isEqualTo(CoreState.SessionStatus.DENIED);

    assertThat(state.revision()).as("nothing written").isEqualTo(revision);
    assertThat(state.get(GetRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job").build()).getKvs(0).getSessionId()).isEqualTo(alices);
    assertThat(state.get(GetRequest.newBuilder().setKey("k").build()).getKvsList()).isEmpty();
    assertThat(state.keepAlive(alices, ALICE, keepAlive)).as("still alice's, alive").isEqualTo(CoreState.SessionStatus.HEARD);

    // The owner itself may; an admin may revoke (an operator's revoke, not a close).
    assertThat(ReleaseResponse.parseFrom(
            apply(ALICE, Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("alice#1").setToken(held.getToken()))).getOk())
        .getReleased()).isTrue();
    init();
    assertThat(RevokeResponse.parseFrom(
            apply(ROOT, Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(alices))).getOk())
        .getRevoked()).isTrue();
  }

  /**
   * A session granted before identities existed (an older build's entry or snapshot: no identity)
   * stays its holder's after an upgrade to mutual TLS with client certificates: it was shared by
   * every client then and is not taken away, or every lease held across the upgrade would be lost.
   */
  @Test
  void aSessionGrantedWithoutAnIdentityStaysUsableByItsHolderAfterAnUpgrade() throws IOException {
    long before = grant(""); // as an older build wrote it
    KeepAliveResponse.Builder keepAlive = KeepAliveResponse.newBuilder();
    assertThat(state.keepAlive(before, ALICE, keepAlive)).isEqualTo(CoreState.SessionStatus.HEARD);
    AcquireResponse held = AcquireResponse.parseFrom(acquire(ALICE, "job", "alice#1", before).getOk());
    assertThat(held.getAcquired()).isTrue();
    assertThat(ReleaseResponse.parseFrom(
            apply(ALICE, Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("alice#1").setToken(held.getToken()))).getOk())
        .getReleased()).isTrue();
  }

  @Test
  void sessionsPerIdentityAreLimitedAndOthersKeepGranting() throws IOException {
    assertThat(grantLimited(ALICE, 2).hasOk()).isTrue();
    Reply second = grantLimited(ALICE, 2);
    assertThat(second.hasOk()).isTrue();
    Reply third = grantLimited(ALICE, 2);
    assertThat(third.getFailure().getCode()).isEqualTo(Failure.Code.RESOURCE_EXHAUSTED);
    assertThat(third.getFailure().getMessage()).contains("max-sessions-per-identity (2)", "CN=alice", "has 2 sessions");
    assertThat(state.sessionsOf(ALICE)).as("nothing granted").isEqualTo(2);
    assertThat(grantLimited(BOB, 2).hasOk()).as("another identity").isTrue();

    long ended = GrantResponse.parseFrom(second.getOk()).getSessionId();
    apply(ALICE, Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(ended).setHolderClosing(true)));
    assertThat(grantLimited(ALICE, 2).hasOk()).as("after one ended").isTrue();
  }
}
