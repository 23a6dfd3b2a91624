package io.leasehold.pekko;

import java.time.Duration;
import org.apache.pekko.actor.AbstractActorWithTimers;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.Props;
import org.apache.pekko.cluster.singleton.ClusterSingletonManager;
import org.apache.pekko.cluster.singleton.ClusterSingletonManagerSettings;

/**
 * The singleton of the tests: it does its leader-only work in small steps (one every 20 ms), each
 * gated on {@code checkLease()}, and writes every start, step and stop to the shared {@link
 * TenureLog} with the fencing token of its tenure, as it would pass that token to the resource
 * it protects. When {@code checkLease()} says no, it stops itself at once.
 */
public final class SingletonWorker extends AbstractActorWithTimers {

  static final String MANAGER = "worker";
  private static final Object TICK = "tick";

  private final TenureLog log;
  private final String node;
  private LeaseholdLease lease;
  private long token = -1;

  public SingletonWorker(TenureLog log, String node) {
    this.log = log;
    this.node = node;
  }

  /** Starts the singleton manager for this worker on {@code system}, with the lease from config. */
  static void startManager(ActorSystem system, TenureLog log, String node) {
    system.actorOf(
        ClusterSingletonManager.props(
            Props.create(SingletonWorker.class, log, node),
            PoisonPill.getInstance(),
            ClusterSingletonManagerSettings.create(system)),
        MANAGER);
  }

  /** {@return the name Cluster Singleton gives the lease of the manager started above} */
  static String leaseName(ActorSystem system) {
    return system.name() + "-singleton-pekko://" + system.name() + "/user/" + MANAGER;
  }

  @Override
  public void preStart() {
    // The manager made the lease before it started this actor; its path names the lease.
    String name = getContext().getSystem().name() + "-singleton-" + getContext().getParent().path();
    lease = LeaseholdPekko.get(getContext().getSystem()).lease(name).orElseThrow();
    token = lease.fencingToken().orElse(-1);
    log.record(TenureLog.Kind.START, node, token);
    getTimers().startTimerWithFixedDelay(TICK, TICK, Duration.ofMillis(20));
  }

  @Override
  public Receive createReceive() {
    return receiveBuilder()
        .matchEquals(
            TICK,
            t -> {
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
