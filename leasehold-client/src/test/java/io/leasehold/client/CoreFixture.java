package io.leasehold.client;

import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.SuiteSettings;
import io.leasehold.testkit.TimeControl;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real 3-node core in this JVM, and contenders that reach it through TCP proxies of their own,
 * so that a partition black-holes exactly one process's traffic to every node.
 */
final class CoreFixture implements ContractFixture {

  static final Duration TTL = Duration.ofSeconds(3);

  private static final int WARM_UP_ROUNDS = 5;

  private final LocalCluster cluster;
  /** The contenders' TLS (mutual, with a client certificate); null for plaintext. */
  private final ClientTls tls;
  private final List<CoreContender> contenders = new ArrayList<>();

  CoreFixture(LocalCluster cluster) {
    this(cluster, null);
  }

  /** Contenders that speak TLS to a cluster that requires it; {@code tls} null for plaintext. */
  CoreFixture(LocalCluster cluster, ClientTls tls) {
    this.cluster = cluster;
    this.tls = tls;
  }

  /** A 3-node cluster under {@code target/}, with fast elections for tests. */
  static LocalCluster startCluster(String name) {
    try {
      Path root = Files.createTempDirectory(Path.of("target"), name + "-");
      return LocalCluster.start(3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(150)));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * Waits until {@code cluster} has granted and released {@value #WARM_UP_ROUNDS} leases in a row,
   * each acquire answered within the suite's operation timeout (TTL / 5). A cluster that has just
   * elected its first leader may still change leaders on a loaded machine, and its JVM has not
   * compiled the request path yet; the contract suite starts several clauses at once, and none of
   * them should meet that start-up instead of the store it tests.
   */
  static void awaitServing(LocalCluster cluster) {
    awaitServing(cluster, null);
  }

  /** {@link #awaitServing(LocalCluster)} for a cluster reached with {@code tls} (null: plaintext). */
  static void awaitServing(LocalCluster cluster, ClientTls tls) {
    AtomicInteger attempt = new AtomicInteger();
    AtomicInteger inARow = new AtomicInteger();
    try (CoreContender process = new CoreContender(cluster.peers(), tls)) {
      LeaseBackend backend = process.connected().backend();
      await("the new core grants " + WARM_UP_ROUNDS + " leases in a row within its operation timeout")
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> {
            try (Lease lease = backend.newLease(
                SuiteSettings.forTtl("warm-up-" + attempt.incrementAndGet(), "warm-up", TTL).build())) {
              boolean granted = lease.acquire().get(30, TimeUnit.SECONDS);
              lease.release().get(30, TimeUnit.SECONDS);
              return granted && inARow.incrementAndGet() >= WARM_UP_ROUNDS;
            } catch (ExecutionException e) {
              inARow.set(0); // a timeout or a failover: not serving steadily yet
              return false;
            }
          });
    }
  }

  @Override
  public Contender newContender() {
    CoreContender c = new CoreContender(cluster.peers(), tls);
    contenders.add(c);
    return c.connected();
  }

  @Override
  public TimeControl time() {
    return TimeControl.realTime();
  }

  @Override
  public Duration ttl() {
    return TTL;
  }

  @Override
  public void revokeInStore(String leaseName) {
    try (CoreClient admin = new CoreClient(endpoints(cluster.peers()), Duration.ofSeconds(2), tls)) {
      DeleteRequest delete =
          DeleteRequest.newBuilder().setCall(admin.newCall()).setKey(LeaseWatch.LEASE_PREFIX + leaseName).build();
      admin.<DeleteResponse>call((stub, out) -> stub.delete(delete, out)).get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("could not revoke " + leaseName + " in the core", e);
    }
  }

  @Override
  public boolean observesLeases() {
    return true;
  }

  @Override
  public boolean attachesKeys() {
    return true;
  }

  @Override
  public void close() {
    contenders.forEach(CoreContender::close);
  }

  static List<InetSocketAddress> endpoints(List<Peer> peers) {
    return peers.stream().map(p -> InetSocketAddress.createUnresolved(p.host(), p.clientPort())).toList();
  }

  /** One process: its own proxies to every node, its own threads behind a gate. */
  static final class CoreContender extends ProxiedContender {
    private final CoreBackend backend;

    CoreContender(List<Peer> peers) {
      this(peers, null);
    }

    /** @param tls TLS through the proxies (they relay bytes); null for plaintext */
    CoreContender(List<Peer> peers, ClientTls tls) {
      super("core-contender", peers.stream().map(p -> new InetSocketAddress(p.host(), p.clientPort())).toList());
      List<InetSocketAddress> via =
          proxies().stream().map(p -> InetSocketAddress.createUnresolved(p.address().getHostString(), p.port())).toList();
      backend =
          new CoreBackend(
              tls == null ? "leasehold://(proxied)" : "leaseholds://(proxied)",
              new CoreTarget(via, tls), TTL.dividedBy(5), runtime(), List.of());
    }

    /**
     * One read first, as the Kubernetes fixture's contenders do: the first connection through this
     * process's proxies is not charged to the first lease operation of a test (TTL / 5), when
     * several clauses start processes at once. Only for a cluster that serves (the fixture's
     * processes); tests that start processes while nodes are down do not call it.
     */
    CoreContender connected() {
      await("a first read through the new process's proxies")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50))
          .ignoreExceptions()
          .until(() -> backend.read("warm-up").get(30, TimeUnit.SECONDS) != null);
      return this;
    }

    @Override
    public LeaseBackend backend() {
      return backend;
    }

    /** Resets every connection of this process, as a restarted router would; it reconnects. */
    void resetConnections() {
      proxies().forEach(io.leasehold.testkit.TcpProxy::dropConnections);
    }

    /** Black-holes this process's traffic to one node only; the other nodes still answer it. */
    void cutOffFrom(int node) {
      proxies().get(node).blackhole();
    }

    @Override
    protected void abandon() {
      backend.abandon();
    }
  }
}
