package io.leasehold.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfig;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElector;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import io.leasehold.LeaseLost;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A Leasehold holder and fabric8's own {@link LeaderElector} with a {@link LeaseLock} on the same
 * Lease object: they never lead at once, and each takes over when the other stops renewing
 * (its traffic black-holed by a TCP proxy, so it keeps trying and failing, as a partitioned pod
 * does).
 *
 * <p>The checker samples both sides on one thread, over and over, for the whole test: fabric8's
 * side is what its callbacks said (onStartLeading .. onStopLeading), kept as a version number that
 * is odd while leading; Leasehold's side is {@code checkAlive()}. A sample reads fabric8's
 * version, then {@code checkAlive()}, then the version again: if the version did not move and was
 * odd, fabric8 led during the whole read, so a {@code true} from {@code checkAlive()} in between
 * is a moment at which both led.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class LeaderElectorInteropTest {

  private static final String NAME = "interop";
  /**
   * Both sides get generous timings (4 s leases): on a loaded two-core machine a stall of a second
   * is common, and either side then rightly gives up, which would end the scenario early.
   */
  private static final Duration LEASEHOLD_TTL = Duration.ofSeconds(4);

  private static final Duration WATCH = Duration.ofSeconds(6);

  private final KubernetesFixture fixture = new KubernetesFixture();
  private final List<AutoCloseable> toClose = new CopyOnWriteArrayList<>();
  private final AtomicBoolean sampling = new AtomicBoolean(true);
  private final AtomicLong bothLed = new AtomicLong();
  private final AtomicLong fabric8Led = new AtomicLong();
  private final AtomicLong leaseholdLed = new AtomicLong();
  private final List<Elector> electors = new CopyOnWriteArrayList<>();

  @AfterEach
  void stop() throws Exception {
    sampling.set(false);
    for (AutoCloseable c : toClose) {
      c.close();
    }
    fixture.close();
  }

  @Test
  void neverBothLeadAndEachTakesOverWhenTheOtherStopsRenewing() throws Exception {
    KubernetesFixture.KubernetesContender process = fixture.newContender();
    toClose.add(process);
    io.leasehold.Lease lease =
        process.backend().newLease(SuiteSettings.forTtl(NAME, "leasehold-pod", LEASEHOLD_TTL).build());
    LossRecorder losses = new LossRecorder(io.leasehold.Ticker.system());
    lease.onLost(losses);
    Thread checker = startChecker(lease);

    // 1. fabric8 leads first; Leasehold keeps trying and never gets it while fabric8 renews.
    Elector first = startElector("fabric8-pod-1");
    await("fabric8-pod-1 leads", first::leading);
    keepTrying(lease, WATCH); // one and a half of fabric8's lease durations
    assertThat(lease.checkAlive()).as("Leasehold while fabric8 renews").isFalse();

    // 2. fabric8 is cut off: it steps down on its own, and Leasehold takes over afterwards.
    first.proxy.blackhole();
    await("Leasehold takes over from the cut-off fabric8 elector", () -> tryOnce(lease));
    assertThat(first.leading()).isFalse();
    Lease taken = fixture.server().admin().resources(Lease.class)
        .inNamespace(MockApiServer.NAMESPACE).withName(NAME).get();
    assertThat(taken.getSpec().getLeaseTransitions()).isEqualTo(1);
    assertThat(lease.fencingToken())
        .hasValue(Long.parseLong(taken.getMetadata().getAnnotations().get(KubernetesLeaseStore.TOKEN_ANNOTATION)));

    // 3. A fresh fabric8 elector never leads while Leasehold renews...
    Elector second = startElector("fabric8-pod-2");
    long until = System.nanoTime() + WATCH.toNanos();
    await("Leasehold renewing for " + WATCH, () -> System.nanoTime() - until >= 0);
    assertThat(second.leading()).as("fabric8 while Leasehold renews").isFalse();
    assertThat(lease.checkAlive()).isTrue();

    // 4. ...and takes over once Leasehold is cut off and has stopped.
    process.cutOff();
    await("fabric8-pod-2 takes over from the cut-off Leasehold holder", second::leading);
    // What must hold when fabric8 leads is that Leasehold's checkAlive() said no since before (the
    // checker's bothLed, below). onLost itself runs on the backend's callback thread, which a
    // starved machine can run late: CI once saw fabric8 lead before the handler had been called.
    assertThat(lease.checkAlive()).as("Leasehold once fabric8-pod-2 leads").isFalse();
    await("Leasehold's onLost", () -> losses.count() >= 1);
    assertThat(losses.count()).isEqualTo(1);
    assertThat(losses.first().reason().kind()).isEqualTo(LeaseLost.Kind.EXPIRED);
    Lease stored = fixture.server().admin().resources(Lease.class)
        .inNamespace(MockApiServer.NAMESPACE).withName(NAME).get();
    assertThat(stored.getSpec().getHolderIdentity()).isEqualTo("fabric8-pod-2");
    assertThat(stored.getSpec().getLeaseTransitions()).isEqualTo(2);

    sampling.set(false);
    checker.join(10_000);
    assertThat(bothLed).as("samples in which fabric8 and Leasehold both led").hasValue(0);
    assertThat(fabric8Led).as("samples in which fabric8 led").hasPositiveValue();
    assertThat(leaseholdLed).as("samples in which Leasehold led").hasPositiveValue();
  }

  private Thread startChecker(io.leasehold.Lease lease) {
    Thread t =
        new Thread(
            () -> {
              while (sampling.get()) {
                boolean alive = false;
                for (Elector e : electors) {
                  long before = e.version.get();
                  alive = lease.checkAlive();
                  long after = e.version.get();
                  if (before == after && (before & 1) == 1) {
                    fabric8Led.incrementAndGet();
                    if (alive) {
                      bothLed.incrementAndGet();
                    }
                  }
                }
                if (alive) {
                  leaseholdLed.incrementAndGet();
                }
                LockSupport.parkNanos(100_000); // leave the CPU to the two sides
              }
            },
            "interop-checker");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** One fabric8 elector with its own client behind its own proxy. */
  private Elector startElector(String identity) {
    TcpProxy proxy = TcpProxy.start(fixture.server().address());
    // Blocking calls give up after 500 ms, so a cut-off elector reaches its renew deadline: it
    // steps down at most renewDeadline + retryPeriod + one call after its last renewal, 2.75 s,
    // well before its 4 s lease duration lets anyone take over.
    KubernetesClient client = MockApiServer.client(proxy.address(), 500);
    ExecutorService threads = Executors.newFixedThreadPool(2);
    Elector e = new Elector(proxy);
    LeaderElectionConfig config =
        new LeaderElectionConfig(
            new LeaseLock(MockApiServer.NAMESPACE, NAME, identity),
            Duration.ofSeconds(4),
            Duration.ofSeconds(2),
            Duration.ofMillis(250),
            new LeaderCallbacks(() -> e.set(true), () -> e.set(false), leader -> {}),
            false,
            identity);
    CompletableFuture<?> running = new LeaderElector(client, config, threads).start();
    electors.add(e);
    toClose.add(
        () -> {
          running.cancel(true);
          threads.shutdownNow();
          client.close();
          proxy.close();
        });
    return e;
  }

  private static final class Elector {
    final TcpProxy proxy;
    /** Odd while fabric8 says it leads; moves on every change. */
    final AtomicLong version = new AtomicLong();

    Elector(TcpProxy proxy) {
      this.proxy = proxy;
    }

    synchronized void set(boolean leading) {
      if (leading() != leading) {
        version.incrementAndGet();
      }
    }

    boolean leading() {
      return (version.get() & 1) == 1;
    }
  }

  private static boolean tryOnce(io.leasehold.Lease lease) {
    try {
      return lease.acquire().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      return false; // unknown outcome: try again
    }
  }

  private static void keepTrying(io.leasehold.Lease lease, Duration howLong) {
    long until = System.nanoTime() + howLong.toNanos();
    await(
        "Leasehold tries for " + howLong,
        () -> {
          assertThat(tryOnce(lease)).as("Leasehold's acquire while fabric8 renews").isFalse();
          return System.nanoTime() - until >= 0;
        });
  }

  private static void await(String what, BooleanSupplier condition) {
    Awaitility.await(what)
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(50))
        .until(condition::getAsBoolean);
  }
}
