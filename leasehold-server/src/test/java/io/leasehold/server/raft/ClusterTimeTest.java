package io.leasehold.server.raft;

import io.leasehold.server.replicated.Formats;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.server.state.Command;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Cluster time: the leader's stamps and the nodes' estimates. */
class ClusterTimeTest {

  private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
  private final ClusterClock clock = new ClusterClock(nanos::get);

  private void pass(long millis) {
    nanos.addAndGet(millis * 1_000_000L);
  }

  @Test
  void stampsAppendedToACommandsBytesParseAsItsFields() throws Exception {
    Command put =
        Command.newBuilder()
            .setPut(PutRequest.newBuilder().setCall(CallId.newBuilder().setCallId(3)).setKey("k"))
            .setStampMillis(1) // a stamp already present is overridden
            .build();
    byte[] received = LeaseStateMachine.withVarintField(put.toByteArray(), 17, 123_456_789_012L);
    byte[] stamped = LeaseStateMachine.stampField(Long.MAX_VALUE / 3, Formats.LOG).toByteArray();
    byte[] entry = new byte[received.length + stamped.length];
    System.arraycopy(received, 0, entry, 0, received.length);
    System.arraycopy(stamped, 0, entry, received.length, stamped.length);

    Command parsed = Command.parseFrom(entry);

    assertThat(parsed.getPut()).isEqualTo(put.getPut());
    assertThat(parsed.getReceivedMillis()).isEqualTo(123_456_789_012L);
    assertThat(parsed.getStampMillis()).isEqualTo(Long.MAX_VALUE / 3);
  }

  @Test
  void aLeaderCountsOnFromTheLatestStampItAppliedAndOnlyInItsTerm() {
    clock.applied(10_000);
    pass(3_000); // an election: cluster time stands still
    clock.lead(4);
    pass(250);
    assertThat(clock.leaderNow(4)).isEqualTo(10_250);
    clock.lead(4); // the same term again changes nothing
    assertThat(clock.leaderNow(4)).isEqualTo(10_250);
    assertThat(clock.leaderNow(5)).as("another term: the estimate").isEqualTo(clock.estimate());
  }

  @Test
  void aFollowerEstimatesFromItsLastStampAndItsOwnClock() {
    clock.applied(10_000);
    pass(40);
    assertThat(clock.estimate()).isEqualTo(10_040);
    clock.applied(9_990); // an older stamp does not move it back
    assertThat(clock.estimate()).isEqualTo(10_040);
  }
}
