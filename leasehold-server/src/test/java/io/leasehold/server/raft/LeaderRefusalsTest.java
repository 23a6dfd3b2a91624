package io.leasehold.server.raft;

import io.leasehold.server.OneNodeCore;
import io.leasehold.server.replicated.CoreState;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.BatchRequest;
import io.leasehold.core.proto.BatchResponse;
import io.leasehold.core.proto.BatchResult;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.ReleaseRequest;
import io.leasehold.core.proto.ReleaseResponse;
import io.leasehold.server.state.Command;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The leader's refusals from its state ({@link LeaderRefusals}) and the one exception to them: an
 * acquire of a name whose release is on its way through the log goes to the log behind it, so a
 * contender takes a released lease in the release's own round. On a real single-node core.
 */
@Timeout(120)
@Tag("integration")
class LeaderRefusalsTest {

  private static final AtomicLong NAMES = new AtomicLong();

  private static OneNodeCore core;

  @BeforeAll
  static void startNode() throws Exception {
    core = OneNodeCore.start("refusals-", c -> c);
  }

  @AfterAll
  static void stopNode() {
    if (core != null) {
      core.close();
    }
  }

  private static long session() {
    return core.stub().grant(GrantRequest.newBuilder().setTtlMillis(60_000).build()).getSessionId();
  }

  private static AcquireRequest acquire(String name, String holder, long session) {
    return AcquireRequest.newBuilder().setName(name).setHolder(holder).setRequestId(1).setSessionId(session).build();
  }

  private static String freshName() {
    return "refusals-" + NAMES.incrementAndGet();
  }

  @Test
  void aContendersAcquireSentBehindTheReleaseIsGrantedByIt() throws Exception {
    String name = freshName();
    long a = session();
    long b = session();
    long token = core.stub().acquire(acquire(name, "a", a)).getToken();
    assertThat(core.stub().acquire(acquire(name, "b", b)).getAcquired()).as("held by a: refused").isFalse();

    // One call, so the acquire reaches the node while the release is on its way through the log
    // (ops are sent to the log in the order given): without the exception, the leader's state still
    // shows a as the holder and refuses b at once.
    BatchResponse answers =
        core.stub()
            .batch(
                BatchRequest.newBuilder()
                    .addOps(BatchOp.newBuilder().setRelease(ReleaseRequest.newBuilder().setName(name).setHolder("a").setToken(token)))
                    .addOps(BatchOp.newBuilder().setAcquire(acquire(name, "b", b)))
                    .build());

    assertThat(ReleaseResponse.parseFrom(ok(answers.getResults(0))).getReleased()).as("a's release").isTrue();
    AcquireResponse taken = AcquireResponse.parseFrom(ok(answers.getResults(1)));
    assertThat(taken.getAcquired()).as("b's acquire, behind the release: %s", taken).isTrue();
    assertThat(taken.getToken()).as("b's token").isGreaterThan(token);
  }

  @Test
  void onceTheReleaseIsAnsweredContendersAreRefusedFromTheStateAgain() {
    String name = freshName();
    long a = session();
    long b = session();
    long c = session();
    long token = core.stub().acquire(acquire(name, "a", a)).getToken();
    assertThat(core.stub().release(ReleaseRequest.newBuilder().setName(name).setHolder("a").setToken(token).build()).getReleased()).isTrue();
    assertThat(core.stub().acquire(acquire(name, "b", b)).getAcquired()).isTrue();

    // The release was answered: its name is no longer being released, so c's acquire is refused
    // without an entry — the exception did not outlive the release.
    long before = core.writes();
    assertThat(core.stub().acquire(acquire(name, "c", c)).getAcquired()).as("held by b: refused").isFalse();
    assertThat(core.writes()).as("log writes for c's refused acquire").isEqualTo(before);
  }

  /** Overlapping releases of one name: acquires go to the log until the last one is answered. */
  @Test
  void aNameStaysBeingFreedUntilItsLastReleaseIsAnswered() {
    CoreState state = new CoreState();
    LeaderRefusals refusals = new LeaderRefusals(() -> true, state);
    Command release = Command.newBuilder().setRelease(ReleaseRequest.newBuilder().setName("job")).build();

    Runnable first = refusals.freeing(release);
    Runnable second = refusals.freeing(release);
    assertThat(refusals.namesBeingFreed()).isEqualTo(1);
    first.run();
    assertThat(refusals.namesBeingFreed()).as("one release still on its way").isEqualTo(1);
    second.run();
    assertThat(refusals.namesBeingFreed()).isZero();

    assertThat(refusals.freeing(Command.newBuilder().setPut(PutRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job")).build()))
        .as("a put frees nothing")
        .isSameAs(LeaderRefusals.NOT_FREEING);
    assertThat(refusals.freeing(Command.newBuilder().setDelete(DeleteRequest.newBuilder().setKey(CoreState.LEASE_PREFIX + "job")).build()))
        .as("an operator's delete leaves a tombstone that refuses contenders anyway")
        .isSameAs(LeaderRefusals.NOT_FREEING);
    assertThat(refusals.namesBeingFreed()).isZero();
  }

  private static ByteString ok(BatchResult result) {
    assertThat(result.hasResponse()).as("answered: %s", result).isTrue();
    return result.getResponse();
  }
}
