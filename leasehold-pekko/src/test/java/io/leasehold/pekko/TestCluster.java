package io.leasehold.pekko;

import static org.awaitility.Awaitility.await;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.StreamSupport;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.BootstrapSetup;
import org.apache.pekko.actor.setup.ActorSystemSetup;
import org.apache.pekko.actor.setup.Setup;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.remote.RARP;
import org.apache.pekko.remote.transport.ThrottlerTransportAdapter;

/**
 * Pekko clusters of several actor systems in this JVM, on loopback ports that Artery picks (port
 * 0), with the helpers the tests need: form the cluster, partition one node from the others
 * (Artery's test-mode black hole), down it from the other side, stop everything.
 *
 * <p>Leases use the {@code leasehold.pekko.lease} block with a 3 s TTL, renewed every 400 ms, each
 * store request allowed 800 ms, and a 1 s safety margin: a holder that stops renewing stops itself
 * a full second before the store can hand the lease on, so the ordering the tests check holds
 * even on a loaded machine, and a slow store answer is not taken for a lost lease.
 */
final class TestCluster implements AutoCloseable {

  /** How long a cluster event or a lease hand-over may take before a test gives up. */
  static final Duration PATIENCE = Duration.ofSeconds(30);

  // -Dleasehold.pekko.test.loglevel=INFO shows what Pekko's singleton and sharding decide.
  private static final String LOG_LEVEL =
      System.getProperty("leasehold.pekko.test.loglevel", "WARNING");

  private final String name;
  private final List<ActorSystem> systems = new ArrayList<>();

  TestCluster(String name) {
    this.name = name;
  }

  /**
   * The configuration every node of the tests runs with.
   *
   * @param backend the {@code backend} URI of the lease block
   * @param extra more settings, taking precedence (HOCON)
   * @return the configuration
   */
  static Config config(String backend, String extra) {
    return ConfigFactory.parseString(extra)
        .withFallback(
            ConfigFactory.parseString(
                """
                pekko {
                  loglevel = "%s"
                  stdout-loglevel = "%s"
                  actor.provider = cluster
                  remote.artery {
                    canonical.hostname = "127.0.0.1"
                    canonical.port = 0
                    advanced.test-mode = on
                  }
                  cluster {
                    jmx.enabled = off
                    downing-provider-class = ""
                    periodic-tasks-initial-delay = 0s
                    gossip-interval = 100ms
                    leader-actions-interval = 100ms
                    unreachable-nodes-reaper-interval = 100ms
                    failure-detector {
                      heartbeat-interval = 100ms
                      acceptable-heartbeat-pause = 1s
                      expected-response-after = 200ms
                    }
                    singleton {
                      use-lease = "leasehold.pekko.lease"
                      lease-retry-interval = 100ms
                      hand-over-retry-interval = 100ms
                    }
                  }
                  coordinated-shutdown {
                    run-by-jvm-shutdown-hook = off
                    # Tests end by terminating every node at once; a graceful leave of each
                    # would only wait for the others. A node that leaves runs it anyway.
                    run-by-actor-system-terminate = off
                    default-phase-timeout = 2s
                    phases.cluster-exiting.timeout = 2s
                    phases.cluster-sharding-shutdown-region.timeout = 2s
                  }
                }
                leasehold.pekko.lease {
                  backend = "%s"
                  heartbeat-timeout = 3s
                  heartbeat-interval = 400ms
                  lease-operation-timeout = 800ms
                  retry-interval = 100ms
                  safety-margin = 1s
                }
                """
                    .formatted(LOG_LEVEL, LOG_LEVEL, backend)))
        .withFallback(ConfigFactory.load())
        .resolve();
  }

  /**
   * Starts one node and joins it to the first node started (the first joins itself, so it is the
   * oldest member: the singleton's and the shard coordinator's first home).
   *
   * @param config its configuration
   * @param setups extra setups, such as a {@link LeaseholdSetup}
   * @return the node's actor system
   */
  ActorSystem start(Config config, Setup... setups) {
    ActorSystemSetup setup = ActorSystemSetup.create(BootstrapSetup.create(config));
    for (Setup s : setups) {
      setup = setup.and(s);
    }
    ActorSystem system = ActorSystem.create(name, setup);
    Address seed = systems.isEmpty() ? address(system) : address(systems.get(0));
    systems.add(system);
    Cluster.get(system).join(seed);
    return system;
  }

  /** Waits until every node sees every node Up. */
  void awaitUp() {
    int n = systems.size();
    await("all " + n + " nodes up")
        .atMost(PATIENCE)
        .until(
            () ->
                systems.stream()
                    .allMatch(
                        s -> {
                          Iterable<Member> members = Cluster.get(s).state().getMembers();
                          return StreamSupport.stream(members.spliterator(), false)
                                      .filter(m -> m.status() == MemberStatus.up())
                                      .count()
                                  == n;
                        }));
  }

  static Address address(ActorSystem system) {
    return Cluster.get(system).selfAddress();
  }

  /**
   * Cuts {@code node} off from every other node in both directions, as a network partition does:
   * Artery's test-mode black hole, set on both sides.
   */
  void partition(ActorSystem node) {
    for (ActorSystem other : systems) {
      if (other == node) {
        continue;
      }
      blackhole(node, address(other));
      blackhole(other, address(node));
    }
  }

  @SuppressWarnings("deprecation") // the throttle command is how Artery's test mode is driven
  private static void blackhole(ActorSystem on, Address peer) {
    RARP rarp = (RARP) RARP.get(on);
    rarp.provider()
        .transport()
        .managementCommand(
            new ThrottlerTransportAdapter.SetThrottle(
                peer,
                ThrottlerTransportAdapter.bothDirection(),
                ThrottlerTransportAdapter.blackholeThrottleMode()));
  }

  /**
   * {@code by} downs {@code victim}, as an operator or a split-brain resolver on the majority side
   * would, and waits until {@code by} has removed it.
   */
  void down(ActorSystem by, ActorSystem victim) {
    Address gone = address(victim);
    Cluster.get(by).down(gone);
    await("node " + gone + " removed by " + address(by))
        .atMost(PATIENCE)
        .until(
            () ->
                StreamSupport.stream(Cluster.get(by).state().getMembers().spliterator(), false)
                    .noneMatch(m -> m.address().equals(gone)));
  }

  /** Terminates every node at once and waits for all of them. */
  @Override
  public void close() {
    List<CompletableFuture<?>> done = new ArrayList<>();
    for (ActorSystem s : systems) {
      s.terminate();
      done.add(s.getWhenTerminated().toCompletableFuture());
    }
    try {
      CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("the actor systems did not terminate", e);
    }
  }
}
