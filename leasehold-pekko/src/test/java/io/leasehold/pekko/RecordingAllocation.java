package io.leasehold.pekko;

import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.cluster.sharding.ShardCoordinator;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Map;
import scala.collection.immutable.Set;
import scala.concurrent.Future;

/**
 * Places each shard on the region that asked for it, and writes the coordinator's start and every
 * allocation it makes to a {@link TenureLog}, under the coordinator lease's fencing token (-1 if
 * the lease was not held).
 */
final class RecordingAllocation
    // The kind Pekko's built-in strategies are: the gate must start it with the actor system.
    implements ShardCoordinator.ActorSystemDependentAllocationStrategy {

  private final ActorSystem system;
  private final TenureLog log;
  private final String node;

  RecordingAllocation(ActorSystem system, TenureLog log, String node) {
    this.system = system;
    this.log = log;
    this.node = node;
  }

  @Override
  public void start(ActorSystem coordinatorSystem) {
    log.record(TenureLog.Kind.START, node, coordinatorToken());
  }

  private long coordinatorToken() {
    return LeaseholdPekko.get(system)
        .lease(LeaseGatedAllocationStrategy.coordinatorLeaseName(system, ShardEntity.TYPE))
        .filter(LeaseholdLease::checkLease)
        .map(l -> l.fencingToken().orElse(-1))
        .orElse(-1L);
  }

  @Override
  public Future<ActorRef> allocateShard(
      ActorRef requester, String shardId, Map<ActorRef, IndexedSeq<String>> current) {
    log.record(TenureLog.Kind.ACT, node, coordinatorToken());
    return scala.concurrent.Future$.MODULE$.successful(requester);
  }

  @Override
  public Future<Set<String>> rebalance(
      Map<ActorRef, IndexedSeq<String>> current, Set<String> rebalanceInProgress) {
    return scala.concurrent.Future$.MODULE$.successful(
        scala.collection.immutable.Set$.MODULE$.<String>empty());
  }
}
