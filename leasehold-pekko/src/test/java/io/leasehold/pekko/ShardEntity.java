package io.leasehold.pekko;

import java.util.Map;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.Props;
import org.apache.pekko.cluster.sharding.ClusterSharding;
import org.apache.pekko.cluster.sharding.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.ShardRegion;

/**
 * The sharded entity of the tests: one entity per shard (the message is the shard id), which
 * handles each message only while its shard's lease holds ({@code pekko.cluster.sharding
 * .use-lease}) and writes its start, each handled message and its stop to that shard's {@link
 * TenureLog} with the shard lease's fencing token.
 */
public final class ShardEntity extends AbstractActor {

  static final String TYPE = "Counter";

  private final Map<String, TenureLog> logs;
  private final String node;
  private TenureLog log;
  private LeaseholdLease lease;
  private long token = -1;

  public ShardEntity(Map<String, TenureLog> logs, String node) {
    this.logs = logs;
    this.node = node;
  }

  /**
   * Starts sharding of {@link #TYPE} on {@code system}, its coordinator allocating through
   * {@code allocation} (gated by the coordinator's lease).
   */
  static ActorRef startSharding(
      ActorSystem system,
      Map<String, TenureLog> logs,
      String node,
      org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy allocation) {
    return ClusterSharding.get(system)
        .start(
            TYPE,
            Props.create(ShardEntity.class, logs, node),
            ClusterShardingSettings.create(system),
            new ShardRegion.MessageExtractor() {
              @Override
              public String entityId(Object message) {
                return (String) message;
              }

              @Override
              public Object entityMessage(Object message) {
                return message;
              }

              @Override
              public String shardId(Object message) {
                return (String) message;
              }
            },
            LeaseGatedAllocationStrategy.create(system, TYPE, allocation),
            PoisonPill.getInstance());
  }

  @Override
  public void preStart() {
    String shard = getSelf().path().name();
    log = logs.get(shard);
    String leaseName = getContext().getSystem().name() + "-shard-" + TYPE + "-" + shard;
    lease = LeaseholdPekko.get(getContext().getSystem()).lease(leaseName).orElseThrow();
    token = lease.fencingToken().orElse(-1);
    log.record(TenureLog.Kind.START, node, token);
  }

  @Override
  public Receive createReceive() {
    return receiveBuilder()
        .match(
            String.class,
            m -> {
              if (lease.checkLease()) {
                log.record(TenureLog.Kind.ACT, node, token);
              } else {
                getContext().stop(getSelf());
              }
            })
        .build();
  }

  @Override
  public void postStop() {
    log.record(TenureLog.Kind.STOP, node, token);
  }
}
