package io.leasehold.pekko;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.leasehold.LeaseLost;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.BootstrapSetup;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.setup.ActorSystemSetup;
import org.apache.pekko.coordination.lease.LeaseException;
import org.apache.pekko.coordination.lease.LeaseTimeoutException;
import org.apache.pekko.coordination.lease.scaladsl.Lease;
import org.apache.pekko.coordination.lease.scaladsl.LeaseProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import scala.Option;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;
import scala.runtime.BoxedUnit;

/**
 * The Pekko lease as Pekko's {@code LeaseProvider} loads it, on an in-memory store on virtual
 * time: nothing here waits for real time to pass.
 */
@Timeout(60)
class LeaseholdLeaseTest {

  static final String BLOCK = "leasehold.pekko.lease";
  static final String NAME = "orders-singleton";

  private final VirtualClock clock = new VirtualClock();
  private final MemoryStore store = MemoryStore.create(clock);
  private final List<ActorSystem> systems = new ArrayList<>();

  @AfterEach
  void terminate() throws Exception {
    for (ActorSystem s : systems) {
      s.terminate();
      s.getWhenTerminated().toCompletableFuture().get(20, TimeUnit.SECONDS);
    }
  }

  /** A local actor system whose Leasehold backend is one connection to the shared store. */
  private ActorSystem system(String name, MemoryBackend connection, String extraConfig) {
    Config config =
        ConfigFactory.parseString(extraConfig)
            .withFallback(
                ConfigFactory.parseString(
                    """
                    pekko.loglevel = "WARNING"
                    pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                    leasehold.pekko.lease {
                      backend = "memory:"
                      heartbeat-timeout = 10s
                      heartbeat-interval = 2s
                      lease-operation-timeout = 1s
                    }
                    """))
            .withFallback(ConfigFactory.load());
    ActorSystem s =
        ActorSystem.create(
            name,
            ActorSystemSetup.create(BootstrapSetup.create(config))
                .and(LeaseholdSetup.create(uri -> connection)));
    systems.add(s);
    return s;
  }

  private ActorSystem system(String name, MemoryBackend connection) {
    return system(name, connection, "");
  }

  private static Lease lease(ActorSystem system, String owner) {
    return LeaseProvider.get(system).getLease(NAME, BLOCK, owner);
  }

  /** Completes a Pekko future, letting the virtual clock run what the store's replies need. */
  private <T> T await(Future<T> future) {
    CompletableFuture<T> f = FutureConverters.asJava(future).toCompletableFuture();
    for (int i = 0; i < 10_000 && !f.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
    }
    return f.join();
  }

  @Test
  void pekkosLeaseProviderLoadsItFromConfigAndTwoOwnersExcludeEachOther() {
    Lease a = lease(system("a", store.connect()), "node-a:2552");
    Lease b = lease(system("b", store.connect()), "node-b:2552");
    assertThat(a).isInstanceOf(LeaseholdLease.class);

    assertThat(await(a.acquire())).isEqualTo(true);
    assertThat(a.checkLease()).isTrue();
    assertThat(await(a.acquire())).as("reentrant for the same owner").isEqualTo(true);
    assertThat(await(b.acquire())).as("held by a").isEqualTo(false);
    assertThat(b.checkLease()).isFalse();
    long first = ((LeaseholdLease) a).fencingToken().orElseThrow();

    assertThat(await(a.release())).isEqualTo(true);
    assertThat(a.checkLease()).isFalse();
    assertThat(await(a.release())).as("a release without a lease is a no-op").isEqualTo(true);
    assertThat(await(b.acquire())).isEqualTo(true);
    assertThat(((LeaseholdLease) b).fencingToken().orElseThrow()).isGreaterThan(first);
  }

  @Test
  void settingsAreMappedFromPekkosKeys() {
    ActorSystem s =
        system(
            "mapped",
            store.connect(),
            """
            leasehold.pekko.lease {
              heartbeat-timeout = 30s
              heartbeat-interval = 4s
              lease-operation-timeout = 3s
              acquire-retries = 5
              retry-interval = 250ms
              max-clock-drift = 0.02
              safety-margin = 5s
            }
            """);
    io.leasehold.LeaseSettings settings =
        ((LeaseholdLease) lease(s, "node-a:2552")).leaseholdLease().settings();

    assertThat(settings.name()).isEqualTo(NAME);
    assertThat(settings.owner()).isEqualTo("node-a:2552");
    assertThat(settings.ttl()).isEqualTo(Duration.ofSeconds(30));
    assertThat(settings.heartbeatInterval()).isEqualTo(Duration.ofSeconds(4));
    assertThat(settings.operationTimeout()).isEqualTo(Duration.ofSeconds(3));
    assertThat(settings.acquireRetries()).isEqualTo(5);
    assertThat(settings.retryInterval()).isEqualTo(Duration.ofMillis(250));
    assertThat(settings.maxClockDrift()).isEqualTo(0.02);
    assertThat(settings.safetyMargin()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void emptyLeaseholdKeysKeepLeaseholdsDefaults() {
    io.leasehold.LeaseSettings settings =
        ((LeaseholdLease) lease(system("defaults", store.connect()), "node-a:2552"))
            .leaseholdLease()
            .settings();
    io.leasehold.LeaseSettings leasehold =
        io.leasehold.LeaseSettings.builder(NAME, "node-a:2552")
            .ttl(Duration.ofSeconds(10))
            .heartbeatInterval(Duration.ofSeconds(2))
            .operationTimeout(Duration.ofSeconds(1))
            .build();
    assertThat(settings).isEqualTo(leasehold);
  }

  /**
   * The renewal and callback threads of the holder are frozen (starved), so no renewal and no
   * {@code onLost} happen; {@code checkLease()} still turns false at the local safe deadline,
   * because it is {@code checkAlive()}. A flag cleared by the loss callback would still say true.
   */
  @Test
  void checkLeaseIsFalsePastTheSafeDeadlineEvenBeforeTheLossCallbackRan() {
    MemoryBackend node = store.connect();
    Lease a = lease(system("a", node), "node-a:2552");
    List<Option<Throwable>> lost = new ArrayList<>();
    assertThat(await(a.acquire(reason -> record(lost, reason)))).isEqualTo(true);
    io.leasehold.LeaseSettings s = ((LeaseholdLease) a).leaseholdLease().settings();

    node.pause();
    clock.advance(s.safeWindow().minusMillis(1));
    assertThat(a.checkLease()).as("just before the safe deadline").isTrue();
    clock.advance(Duration.ofMillis(2));
    assertThat(a.checkLease()).as("past the safe deadline, no renewal ran").isFalse();
    assertThat(lost).as("the callback cannot have run: the process is frozen").isEmpty();

    node.resume();
    clock.advance(Duration.ZERO);
    clock.advance(Duration.ZERO);
    assertThat(lost).hasSize(1);
    assertThat(lost.get(0).get()).isInstanceOf(LeaseLostException.class);
    LeaseLostException e = (LeaseLostException) lost.get(0).get();
    assertThat(e.reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
    assertThat(e.fencingToken()).isPositive();
    assertThat(e).isInstanceOf(LeaseException.class);
  }

  /** The lease-lost callback is Leasehold's onLost: it fires for a revocation in the store too. */
  @Test
  void theLeaseLostCallbackFiresFromOnLostOncePerLoss() {
    Lease a = lease(system("a", store.connect()), "node-a:2552");
    List<Option<Throwable>> lost = new ArrayList<>();
    assertThat(await(a.acquire(reason -> record(lost, reason)))).isEqualTo(true);
    long token = ((LeaseholdLease) a).fencingToken().orElseThrow();

    store.revoke(NAME);
    clock.advance(Duration.ZERO);
    clock.advance(Duration.ZERO);

    assertThat(a.checkLease()).isFalse();
    assertThat(lost).hasSize(1);
    LeaseLostException e = (LeaseLostException) lost.get(0).get();
    assertThat(e.reason().kind()).isEqualTo(LeaseLost.Kind.REVOKED);
    assertThat(e.fencingToken()).isEqualTo(token);
    assertThat(e.getMessage()).contains(NAME).contains("fencing token " + token);

    clock.advance(Duration.ofMinutes(1));
    assertThat(lost).as("once per loss").hasSize(1);
  }

  @Test
  void anUnknownOutcomeFailsWithPekkosLeaseTimeoutException() {
    MemoryBackend node = store.connect();
    Lease a = lease(system("a", node), "node-a:2552");
    node.cutOff();

    assertThatThrownBy(() -> await(a.acquire()))
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOf(LeaseTimeoutException.class)
        .hasCauseInstanceOf(io.leasehold.LeaseTimeoutException.class)
        .hasMessageContaining("outcome unknown");
    node.heal();
  }

  @Test
  void javaCodeGetsTheSameLeaseThroughPekkosJavadslProviderAndTheTokenThroughTheExtension() {
    ActorSystem s = system("java", store.connect());
    org.apache.pekko.coordination.lease.javadsl.Lease javaLease =
        org.apache.pekko.coordination.lease.javadsl.LeaseProvider.get(s)
            .getLease(NAME, BLOCK, "node-a:2552");
    CompletableFuture<Boolean> acquired = javaLease.acquire().toCompletableFuture();
    for (int i = 0; i < 10_000 && !acquired.isDone(); i++) {
      clock.advance(Duration.ofMillis(10));
    }
    assertThat(acquired.join()).isTrue();
    assertThat(javaLease.checkLease()).isTrue();

    Optional<LeaseholdLease> leasehold = LeaseholdPekko.get(s).lease(NAME);
    assertThat(leasehold).isPresent();
    assertThat(leasehold.get().fencingToken()).isPresent();
    assertThat(leasehold.get().remaining()).isPositive();
    assertThat(LeaseholdPekko.get(s).lease("no-such-lease")).isEmpty();
  }

  /**
   * The source document: the framework releases on coordinated shutdown. The actor system's
   * backends close after its actors stopped, releasing every lease still held, so another node
   * gets it at once and not after the TTL.
   */
  @Test
  void coordinatedShutdownReleasesHeldLeases() throws Exception {
    ActorSystem s = system("shutdown", store.connect());
    Lease a = lease(s, "node-a:2552");
    assertThat(await(a.acquire())).isEqualTo(true);
    assertThat(store.lookup(NAME)).isPresent();

    CoordinatedShutdown.get(s)
        .runAll(CoordinatedShutdown.unknownReason())
        .toCompletableFuture()
        .get(20, TimeUnit.SECONDS);

    assertThat(s.getWhenTerminated().toCompletableFuture().isDone()).isTrue();
    assertThat(store.lookup(NAME)).as("released in the store").isEmpty();
  }

  /** A bad URI fails where Pekko loads the lease, naming the key and the schemes there are. */
  @Test
  void anUnknownBackendIsRefusedNamingTheKey() {
    ActorSystem s =
        ActorSystem.create(
            "bad-uri",
            ConfigFactory.parseString(
                    "pekko.loglevel = OFF\n"
                        + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n"
                        + "leasehold.pekko.lease.backend = \"nosuch://somewhere\"")
                .withFallback(ConfigFactory.load()));
    systems.add(s);
    assertThatThrownBy(() -> lease(s, "node-a:2552"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Leasehold lease '" + NAME + "'")
        .hasMessageContaining("'backend' = \"nosuch://somewhere\"")
        .hasMessageContaining("memory");
  }

  /** A URI with a password is refused without showing it. */
  @Test
  void aBackendWithAPasswordIsRefusedWithoutShowingIt() {
    ActorSystem s =
        ActorSystem.create(
            "password-uri",
            ConfigFactory.parseString(
                    "pekko.loglevel = OFF\n"
                        + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n"
                        + "leasehold.pekko.lease.backend = \"memory://alice:hunter2@localhost\"")
                .withFallback(ConfigFactory.load()));
    systems.add(s);
    assertThatThrownBy(() -> lease(s, "node-a:2552"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'backend' = \"memory://alice:***@localhost\"")
        .hasMessageNotContaining("hunter2");
  }

  /**
   * The shard coordinator's gate: allocations pass only while the coordinator lease's {@code
   * checkLease()} is true, so a coordinator whose lease threads starved stops allocating at its
   * safe deadline, before its loss is even reported.
   */
  @Test
  void theAllocationGateLetsTheCoordinatorAllocateOnlyWhileItsLeaseHolds() {
    MemoryBackend node = store.connect();
    ActorSystem s = system("gate", node);
    List<String> decided = new ArrayList<>();
    org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy gate =
        LeaseGatedAllocationStrategy.create(
            s,
            "Orders",
            new org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy() {
              @Override
              public Future<org.apache.pekko.actor.ActorRef> allocateShard(
                  org.apache.pekko.actor.ActorRef requester,
                  String shardId,
                  scala.collection.immutable.Map<
                          org.apache.pekko.actor.ActorRef,
                          scala.collection.immutable.IndexedSeq<String>>
                      current) {
                decided.add(shardId);
                return scala.concurrent.Future$.MODULE$.successful(requester);
              }

              @Override
              public Future<scala.collection.immutable.Set<String>> rebalance(
                  scala.collection.immutable.Map<
                          org.apache.pekko.actor.ActorRef,
                          scala.collection.immutable.IndexedSeq<String>>
                      current,
                  scala.collection.immutable.Set<String> inProgress) {
                return scala.concurrent.Future$.MODULE$.successful(inProgress.incl("moved"));
              }
            });
    scala.collection.immutable.Map<
            org.apache.pekko.actor.ActorRef, scala.collection.immutable.IndexedSeq<String>>
        none = scala.collection.immutable.Map$.MODULE$.empty();

    assertThatThrownBy(() -> await(gate.allocateShard(s.deadLetters(), "1", none)))
        .hasRootCauseInstanceOf(LeaseException.class)
        .hasMessageContaining("pekko.cluster.sharding.coordinator-singleton.use-lease");

    Lease lease =
        LeaseProvider.get(s)
            .getLease(
                LeaseGatedAllocationStrategy.coordinatorLeaseName(s, "Orders"),
                BLOCK,
                "node-a:2552");
    assertThatThrownBy(() -> await(gate.allocateShard(s.deadLetters(), "2", none)))
        .hasMessageContaining("no longer holds its lease");
    assertThat(await(lease.acquire())).isEqualTo(true);
    assertThat(await(gate.allocateShard(s.deadLetters(), "3", none))).isEqualTo(s.deadLetters());
    assertThat(await(gate.rebalance(none, scala.collection.immutable.Set$.MODULE$.<String>empty())).size())
        .as("the delegate decides while the lease holds")
        .isEqualTo(1);

    node.pause(); // renewals and the loss callback starve
    clock.advance(((LeaseholdLease) lease).remaining().plusMillis(1));
    assertThatThrownBy(() -> await(gate.allocateShard(s.deadLetters(), "4", none)))
        .hasMessageContaining("refused: this shard coordinator no longer holds its lease");
    assertThat(await(gate.rebalance(none, scala.collection.immutable.Set$.MODULE$.<String>empty())))
        .as("no rebalance without the lease")
        .isEqualTo(scala.collection.immutable.Set$.MODULE$.<String>empty());
    assertThat(decided).as("only shard 3 was decided, while the lease held").containsExactly("3");
    node.resume();
  }

  /**
   * An allocation the delegate decides later (its future completes after the call) is taken up
   * only if the lease still holds then: one decided while the lease held but answered after its
   * safe deadline is refused, so a coordinator that lost its lease meanwhile places no shard.
   */
  @Test
  void anAllocationDecidedAfterTheLeaseWasLostIsRefused() {
    MemoryBackend node = store.connect();
    ActorSystem s = system("late-gate", node);
    scala.concurrent.Promise<org.apache.pekko.actor.ActorRef> decision = scala.concurrent.Promise$.MODULE$.apply();
    org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy gate =
        LeaseGatedAllocationStrategy.create(
            s,
            "Orders",
            new org.apache.pekko.cluster.sharding.ShardCoordinator.ShardAllocationStrategy() {
              @Override
              public Future<org.apache.pekko.actor.ActorRef> allocateShard(
                  org.apache.pekko.actor.ActorRef requester,
                  String shardId,
                  scala.collection.immutable.Map<
                          org.apache.pekko.actor.ActorRef,
                          scala.collection.immutable.IndexedSeq<String>>
                      current) {
                return decision.future(); // decided later
              }

              @Override
              public Future<scala.collection.immutable.Set<String>> rebalance(
                  scala.collection.immutable.Map<
                          org.apache.pekko.actor.ActorRef,
                          scala.collection.immutable.IndexedSeq<String>>
                      current,
                  scala.collection.immutable.Set<String> inProgress) {
                return scala.concurrent.Future$.MODULE$.successful(inProgress);
              }
            });
    Lease lease =
        LeaseProvider.get(s)
            .getLease(LeaseGatedAllocationStrategy.coordinatorLeaseName(s, "Orders"), BLOCK, "node-a:2552");
    assertThat(await(lease.acquire())).isEqualTo(true);
    Future<org.apache.pekko.actor.ActorRef> allocation =
        gate.allocateShard(s.deadLetters(), "7", scala.collection.immutable.Map$.MODULE$.empty());

    node.pause(); // the lease runs out while the delegate is still deciding
    clock.advance(((LeaseholdLease) lease).remaining().plusMillis(1));
    decision.success(s.deadLetters());

    assertThatThrownBy(() -> await(allocation))
        .as("a decision taken up after the lease was lost")
        .hasMessageContaining("refused: this shard coordinator no longer holds its lease");
    node.resume();
  }

  private static BoxedUnit record(List<Option<Throwable>> lost, Option<Throwable> reason) {
    synchronized (lost) {
      lost.add(reason);
    }
    return BoxedUnit.UNIT;
  }
}
