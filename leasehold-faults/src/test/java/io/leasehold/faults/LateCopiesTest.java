package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.faults.LateCopies.Tally;
import org.junit.jupiter.api.Test;

/** How the answer to a late copy of an acquire is counted against the original's. */
class LateCopiesTest {

  private static byte[] granted(long token) {
    return AcquireResponse.newBuilder().setAcquired(true).setToken(token).build().toByteArray();
  }

  private static byte[] refused(String holder) {
    return AcquireResponse.newBuilder().setAcquired(false).setHolder(holder).build().toByteArray();
  }

  @Test
  void theOriginalsAnswerAgainIsTheSame() throws Exception {
    assertThat(LateCopies.acquire(granted(7), granted(7))).isEqualTo(new Tally(0, 1, 0, 0, 0));
  }

  @Test
  void aSecondGrantWithAnotherTokenIsAppliedTwice() throws Exception {
    assertThat(LateCopies.acquire(granted(9), granted(7))).isEqualTo(new Tally(0, 0, 0, 1, 0));
  }

  /** The name changed hands before the copy came: the leader refuses it from its state; nothing applied. */
  @Test
  void aRefusalOfACopyOfAGrantedAcquireAppliesNothing() throws Exception {
    assertThat(LateCopies.acquire(refused("c2#1"), granted(7))).isEqualTo(new Tally(0, 0, 0, 0, 1));
  }

  @Test
  void aGrantToACopyOfARefusedAcquireIsFirstApplied() throws Exception {
    assertThat(LateCopies.acquire(granted(9), refused("c2#1"))).isEqualTo(new Tally(0, 0, 0, 0, 0, 1));
    assertThat(LateCopies.acquire(refused("c3#1"), refused("c2#1"))).isEqualTo(new Tally(0, 0, 0, 0, 1));
  }
}
