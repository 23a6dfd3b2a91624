package io.leasehold.pekko;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.cluster.sharding.ShardCoordinator;
import org.apache.pekko.coordination.lease.LeaseException;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Map;
import scala.collection.immutable.Set;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;

/**
 * A shard allocation strategy that lets the shard coordinator allocate or rebalance only while
 * {@code checkLease()} of its Leasehold lease is true: the source document's "checkAlive before
 * each allocation". Pekko's coordinator itself does not check its lease between acquiring it and
 * being told of a loss; with this gate, a coordinator whose lease ran out (its renewals starved,
 * its process paused, its node cut off) refuses every allocation from its safe deadline on, and
 * Pekko retries the request with whichever coordinator holds the lease then.
 *
 * <pre>{@code
 * ShardCoordinator.ShardAllocationStrategy strategy = LeaseGatedAllocationStrategy.create(
 *     system, "Order",
 *     ShardCoordinator.ShardAllocationStrategy$.MODULE$.leastShardAllocationStrategy(1, 0.1));
 * ClusterSharding.get(system).start("Order", props, settings, extractor, strategy, handOffStopMessage);
 * }</pre>
 *
 * <p>It needs {@code pekko.cluster.sharding.coordinator-singleton.use-lease} to point at a
 * Leasehold lease block; without one it refuses every allocation and says so.
 */
public final class LeaseGatedAllocationStrategy
    // The system-dependent variant is Pekko-internal, but the built-in strategies are of that
    // kind: forwarding start(system) to them is the only way to wrap them.
    implements ShardCoordinator.ActorSystemDependentAllocationStrategy {

  private final ShardCoordinator.ShardAllocationStrategy delegate;
  private final LeaseholdPekko leases;
  private final String leaseName;
  private final String typeName;

  private LeaseGatedAllocationStrategy(
      ActorSystem system, String typeName, ShardCoordinator.ShardAllocationStrategy delegate) {
    this.delegate = delegate;
    this.leases = LeaseholdPekko.get(system);
    this.typeName = typeName;
    this.leaseName = coordinatorLeaseName(system, typeName);
  }

  /**
   * Wraps {@code delegate} for the entity type {@code typeName}.
   *
   * @param system the actor system sharding runs in
   * @param typeName the entity type name given to {@code ClusterSharding.start}
   * @param delegate decides where shards go, when the lease allows a decision
   * @return the gated strategy
   */
  public static ShardCoordinator.ShardAllocationStrategy create(
      ActorSystem system, String typeName, ShardCoordinator.ShardAllocationStrategy delegate) {
    return new LeaseGatedAllocationStrategy(
        Objects.requireNonNull(system, "system"),
        Objects.requireNonNull(typeName, "typeName"),
        Objects.requireNonNull(delegate, "delegate"));
  }

  /**
   * The name Cluster Sharding gives the lease of the coordinator singleton of {@code typeName}:
   * Cluster Singleton's {@code <system>-singleton-<manager path>}, the manager being {@code
   * /system/<guardian-name>/<URL-encoded type name>Coordinator}.
   */
  static String coordinatorLeaseName(ActorSystem system, String typeName) {
    String guardian = system.settings().config().getString("pekko.cluster.sharding.guardian-name");
    return system.name() + "-singleton-pekko://" + system.name() + "/system/" + guardian + "/"
        + URLEncoder.encode(typeName, StandardCharsets.UTF_8) + "Coordinator";
  }

  @Override
  public void start(ActorSystem system) {
    if (delegate instanceof ShardCoordinator.ActorSystemDependentAllocationStrategy s) {
      s.start(system);
    } else if (delegate instanceof ShardCoordinator.StartableAllocationStrategy s) {
      s.start();
    }
  }

  @Override
  public Future<ActorRef> allocateShard(
      ActorRef requester, String shardId, Map<ActorRef, IndexedSeq<String>> current) {
    LeaseException refused = refusal("allocation of shard [" + shardId + "]");
    if (refused != null) {
      return scala.concurrent.Future$.MODULE$.failed(refused);
    }
    Future<ActorRef> decided = delegate.allocateShard(requester, shardId, current);
    if (decided.isCompleted()) {
      return decided;
    }
    // The delegate decided later: the lease must still hold when the decision is taken up.
    CompletableFuture<ActorRef> gated =
        FutureConverters.asJava(decided)
            .toCompletableFuture()
            .thenApply(
                region -> {
                  LeaseException late = refusal("allocation of shard [" + shardId + "]");
                  if (late != null) {
                    throw new CompletionException(late);
                  }
                  return region;
                });
    return FutureConverters.asScala(gated);
  }

  @Override
  public Future<Set<String>> rebalance(
      Map<ActorRef, IndexedSeq<String>> current, Set<String> rebalanceInProgress) {
    if (refusal("rebalance") != null) {
      // Skip this round; the coordinator that holds the lease rebalances.
      return scala.concurrent.Future$.MODULE$.successful(scala.collection.immutable.Set$.MODULE$.<String>empty());
    }
    return delegate.rebalance(current, rebalanceInProgress);
  }

  /** Null while this node's coordinator lease is held, else why the step is refused. */
  private LeaseException refusal(String step) {
    LeaseholdLease lease = leases.lease(leaseName).orElse(null);
    if (lease == null) {
      return new LeaseException(
          step + " of entity type [" + typeName + "] refused: no Leasehold lease named '"
              + leaseName + "' was made in this actor system; set"
              + " pekko.cluster.sharding.coordinator-singleton.use-lease to a Leasehold lease"
              + " block such as \"leasehold.pekko.lease\"");
    }
    if (!lease.checkLease()) {
      return new LeaseException(
          step + " of entity type [" + typeName + "] refused: this shard coordinator no longer"
              + " holds its lease '" + leaseName + "'");
    }
    return null;
  }
}
