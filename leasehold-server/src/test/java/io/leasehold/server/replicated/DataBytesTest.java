package io.leasehold.server.replicated;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.CompareAndSetRequest;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.RevokeRequest;
import io.leasehold.core.proto.Tenure;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Expire;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/**
 * The state's running count of data bytes ({@link CoreState#dataBytes()}, what {@code
 * --max-data-bytes} bounds): after every kind of change it is what the definition gives for the
 * state as it is, which is also what a recount over the whole state and a snapshot round trip give.
 */
class DataBytesTest {

  private static final long ENTRY = CoreState.DATA_BYTES_PER_ENTRY;
  private static final String LEASE = CoreState.LEASE_PREFIX;

  private final CoreState state = new CoreState();
  private long index;
  private long calls;

  private CoreState.Applied apply(Command.Builder command) {
    CoreState.Applied applied = state.apply(++index, 1, command.setIdentity("id").build());
    assertThat(applied.reply().hasOk()).as("reply: %s", applied.reply()).isTrue();
    assertThat(state.dataBytes()).as("running count after entry %d", index).isEqualTo(state.recountDataBytes());
    return applied;
  }

  private CallId call() {
    return CallId.newBuilder().setClientIdHigh(1).setClientIdLow(2).setCallId(++calls).build();
  }

  private long grant(String owner) throws IOException {
    CoreState.Applied applied =
        apply(Command.newBuilder().setGrant(GrantRequest.newBuilder().setCall(call()).setOwner(owner).setTtlMillis(10_000)));
    return GrantResponse.parseFrom(applied.reply().getOk()).getSessionId();
  }

  private void put(String key, String value, long session) {
    apply(Command.newBuilder().setPut(PutRequest.newBuilder().setCall(call()).setKey(key).setValue(ByteString.copyFromUtf8(value)).setSessionId(session)));
  }

  private long acquire(String name, String holder, long requestId, long session) throws IOException {
    CoreState.Applied applied =
        apply(Command.newBuilder()
            .setAcquire(AcquireRequest.newBuilder().setCall(call()).setName(name).setHolder(holder).setRequestId(requestId).setSessionId(session)));
    AcquireResponse response = AcquireResponse.parseFrom(applied.reply().getOk());
    assertThat(response.getAcquired()).as("acquired %s", name).isTrue();
    return response.getToken();
  }

  private void delete(String key) {
    apply(Command.newBuilder().setDelete(DeleteRequest.newBuilder().setCall(call()).setKey(key)));
  }

  /** {@return the bytes the definition gives one key or tombstone} */
  private static long key(String key, String value) {
    return ENTRY + key.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
  }

  /** {@return the bytes the definition gives one session (its identity is "id" here)} */
  private static long session(String owner) {
    return ENTRY + owner.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + "id".length();
  }

  @Test
  void putsOverwritesAndDeletesOfKeysWithoutASession() {
    assertThat(state.dataBytes()).as("empty").isZero();
    put("a", "xyz", 0);
    assertThat(state.dataBytes()).isEqualTo(key("a", "xyz"));
    put("a", "xy", 0);
    assertThat(state.dataBytes()).as("an overwrite counts the new value only").isEqualTo(key("a", "xy"));
    put("é/ключ", "значение", 0);
    assertThat(state.dataBytes()).as("keys and values in UTF-8 bytes").isEqualTo(key("a", "xy") + key("é/ключ", "значение"));
    apply(Command.newBuilder()
        .setCompareAndSet(CompareAndSetRequest.newBuilder().setCall(call()).setKey("a").setExpectedModRevision(state.revision() - 1)
            .setValue(ByteString.copyFromUtf8("longer value"))));
    assertThat(state.dataBytes()).as("a compare-and-set that wrote").isEqualTo(key("a", "longer value") + key("é/ключ", "значение"));
    delete("a");
    delete("é/ключ");
    delete("never-was");
    assertThat(state.dataBytes()).as("everything deleted").isZero();
  }

  @Test
  void sessionsLeasesAttachedKeysAndTombstonesAreCountedUntilTheyGo() throws IOException {
    long s = grant("owner");
    assertThat(state.dataBytes()).as("a session").isEqualTo(session("owner"));
    put("s/k", "v", s);
    long token = acquire("job", "h#1", 1, s);
    apply(Command.newBuilder()
        .setPut(PutRequest.newBuilder().setCall(call()).setKey("x").setValue(ByteString.copyFromUtf8("attached"))
            .setTenure(Tenure.newBuilder().setName("job").setHolder("h#1").setToken(token))));
    long all = session("owner") + key("s/k", "v") + key(LEASE + "job", "h#1") + key(CoreState.ATTACHED_PREFIX + "job/x", "attached");
    assertThat(state.dataBytes()).as("session, key, lease and attached key").isEqualTo(all);

    // The same holder's retry through the same session, and its new tenure: one key still.
    acquire("job", "h#1", 1, s);
    assertThat(state.dataBytes()).as("a retried acquire").isEqualTo(all);
    token = acquire("job", "h#1", 2, s);
    assertThat(state.dataBytes()).as("a replaced tenure takes its attached key along")
        .isEqualTo(session("owner") + key("s/k", "v") + key(LEASE + "job", "h#1"));

    apply(Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("h#1").setToken(token)));
    assertThat(state.dataBytes()).as("released").isEqualTo(session("owner") + key("s/k", "v"));

    // An operator's delete of a held lease leaves a tombstone of the same bytes.
    token = acquire("job", "h#1", 3, s);
    delete(LEASE + "job");
    assertThat(state.dataBytes()).as("a tombstone").isEqualTo(session("owner") + key("s/k", "v") + key(LEASE + "job", "h#1"));
    apply(Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setCall(call()).setName("job").setHolder("h#1").setToken(token)));
    assertThat(state.dataBytes()).as("its holder released the revoked tenure").isEqualTo(session("owner") + key("s/k", "v"));

    // An operator's revoke frees nothing; the expiry frees the session, its keys and tombstones.
    acquire("job", "h#1", 4, s);
    delete(LEASE + "job");
    apply(Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(s)));
    assertThat(state.dataBytes()).as("revoked, not expired yet")
        .isEqualTo(session("owner") + key("s/k", "v") + key(LEASE + "job", "h#1"));
    apply(Command.newBuilder().setExpire(Expire.newBuilder().setSessionId(s).setTerm(1)));
    assertThat(state.dataBytes()).as("expired").isZero();

    // A holder's close ends its session at once, with its lease and the lease's attached key.
    long t = grant("other");
    long second = acquire("job2", "h#2", 1, t);
    apply(Command.newBuilder()
        .setPut(PutRequest.newBuilder().setCall(call()).setKey("y").setValue(ByteString.copyFromUtf8("v"))
            .setTenure(Tenure.newBuilder().setName("job2").setHolder("h#2").setToken(second))));
    apply(Command.newBuilder().setRevoke(RevokeRequest.newBuilder().setCall(call()).setSessionId(t).setHolderClosing(true)));
    assertThat(state.dataBytes()).as("closed").isZero();
  }

  @Test
  void aSnapshotRoundTripGivesTheSameCountAsTheRunningOne() throws IOException {
    long s = grant("owner");
    put("plain", "value", 0);
    put("é", "ü", s);
    acquire("held", "h#1", 1, s);
    acquire("revoked", "h#1", 1, s);
    delete(LEASE + "revoked");
    long before = state.dataBytes();
    assertThat(before).isEqualTo(
        session("owner") + key("plain", "value") + key("é", "ü") + key(LEASE + "held", "h#1") + key(LEASE + "revoked", "h#1"));

    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    state.writeSnapshot(bytes);
    CoreState copy = new CoreState();
    copy.apply(1, 1, Command.newBuilder().setPut(PutRequest.newBuilder().setKey("gone after the load")).build());
    copy.readSnapshot(new ByteArrayInputStream(bytes.toByteArray()));
    assertThat(copy.dataBytes()).as("loaded").isEqualTo(before).isEqualTo(copy.recountDataBytes());
  }
}
