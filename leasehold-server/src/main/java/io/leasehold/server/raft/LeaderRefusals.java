package io.leasehold.server.raft;

import io.leasehold.server.replicated.CoreState;

import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.server.state.Command;
import io.leasehold.server.state.Reply;
import java.util.concurrent.ConcurrentHashMap;
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
 * long after a release). Nor is a client's retry answered here (the edge's {@code RetryMark}):
 * its earlier attempt may still reach the log, and only a refusal the log made is remembered for
 * the call, so that the late attempt gets it too instead of the name freed meanwhile.
 *
 * <p><b>A name being released goes to the log.</b> While a release of a name that this node sent
 * to the log is unanswered, an acquire of that name is not refused here but sent to the log too,
 * where it lands behind the release and is granted there if the release freed the name. A
 * contender then takes a released lease in the release's own Raft round (the two entries travel
 * together) instead of in a second round after it: a handover costs one round, not two. Sending
 * to the log is always allowed; it only costs an entry. A release that reaches the leader through
 * a follower, or an expiry, is not seen here: contenders are refused until the state shows the
 * name free, as before. (An operator's delete or a revoke leaves a tombstone that refuses everyone
 * but the holder itself, whom the state never refuses: nothing to follow.)
 */
public final class LeaderRefusals {

  /** What {@link #freeing} returns for a command that frees no name: nothing to end. */
  static final Runnable NOT_FREEING = () -> {};

  private final BooleanSupplier leadsHere;
  private final CoreState state;
  /** Names with releases on their way through the log from this node, and how many of each. */
  private final ConcurrentHashMap<String, Integer> beingFreed = new ConcurrentHashMap<>();

  /**
   * @param leadsHere whether this node leads now
   * @param state this node's applied state
   */
  public LeaderRefusals(BooleanSupplier leadsHere, CoreState state) {
    this.leadsHere = leadsHere;
    this.state = state;
  }

  /** {@return the reply the log would give {@code acquire}: a refusal; null when only the log can decide} */
  public Reply refusal(AcquireRequest acquire) {
    if (!leadsHere.getAsBoolean()) {
      return null;
    }
    if (!beingFreed.isEmpty() && beingFreed.containsKey(acquire.getName())) {
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

  /**
   * Notes that {@code command}, about to be sent to the log, may free a lease's name (a release):
   * until the returned action runs (when the write is answered or failed), acquires of that name
   * go to the log.
   *
   * @return the action that ends it; {@link #NOT_FREEING} for any other command
   */
  public Runnable freeing(Command command) {
    if (!command.hasRelease()) {
      return NOT_FREEING;
    }
    String name = command.getRelease().getName();
    beingFreed.merge(name, 1, Integer::sum);
    return () -> beingFreed.computeIfPresent(name, (n, count) -> count == 1 ? null : count - 1);
  }

  /** {@return how many names have a release on its way from this node (for tests)} */
  int namesBeingFreed() {
    return beingFreed.size();
  }
}
