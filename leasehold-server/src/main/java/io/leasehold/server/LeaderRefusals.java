package io.leasehold.server;

import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.server.state.Reply;
import java.util.function.BooleanSupplier;

/**
 * Answers, on the leader, an acquire that the log would refuse anyway: a name held by someone
 * else. The answer comes from the leader's applied state, so a refused acquire costs no log entry,
 * no fsync on three nodes and no replication — contenders polling a held lease were most of the
 * writes of a contended workload.
 *
 * <p><b>Why it is safe.</b> A refusal changes nothing, so it may be answered from any state the
 * lease really was in while the call was under way. On the leader every write acknowledged to any
 * client was applied before its reply left, so the applied state is at least as new as the call.
 * A deposed leader that does not know it yet may answer from older state for at most its leader
 * lease; that can refuse an acquire the new leader would grant, never grant one: a grant only
 * ever comes from the log, which also decides every case this class cannot (a free name, the same
 * holder's retry or new tenure). Followers never answer here (a lagging follower could refuse for
 * long after a release).
 */
final class LeaderRefusals {

  private final BooleanSupplier leadsHere;
  private final CoreState state;

  /**
   * @param leadsHere whether this node leads now
   * @param state this node's applied state
   */
  LeaderRefusals(BooleanSupplier leadsHere, CoreState state) {
    this.leadsHere = leadsHere;
    this.state = state;
  }

  /** {@return the reply the log would give {@code acquire}: a refusal; null when only the log can decide} */
  Reply refusal(AcquireRequest acquire) {
    if (!leadsHere.getAsBoolean()) {
      return null;
    }
    String holder = state.refusingHolder(acquire);
    if (holder == null) {
      return null;
    }
    return Reply.newBuilder()
        .setOk(AcquireResponse.newBuilder().setAcquired(false).setHolder(holder).build().toByteString())
        .build();
  }
}
