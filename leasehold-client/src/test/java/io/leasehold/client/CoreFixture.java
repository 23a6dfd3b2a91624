package io.leasehold.client;

import io.leasehold.LeaseBackend;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.Peer;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.TimeControl;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real 3-node core in this JVM, and contenders that reach it through TCP proxies of their own,
 * so that a partition black-holes exactly one process's traffic to every node.
 */
final class CoreFixture implements ContractFixture {

  static final Duration TTL = Duration.ofSeconds(2);

  private final LocalCluster cluster;
  private final List<CoreContender> contenders = new ArrayList<>();

  CoreFixture(LocalCluster cluster) {
    this.cluster = cluster;
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

  @Override
  public Contender newContender() {
    CoreContender c = new CoreContender(cluster.peers());
    contenders.add(c);
    return c;
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
    try (CoreClient admin = new CoreClient(endpoints(cluster.peers()), Duration.ofSeconds(2))) {
      DeleteRequest delete =
          DeleteRequest.newBuilder().setCall(admin.newCall()).setKey(LeaseWatch.LEASE_PREFIX + leaseName).build();
      admin.<DeleteResponse>call((stub, out) -> stub.delete(delete, out)).get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("could not revoke " + leaseName + " in the core", e);
    }
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
      super("core-contender", peers.stream().map(p -> new InetSocketAddress(p.host(), p.clientPort())).toList());
      List<InetSocketAddress> via =
          proxies().stream().map(p -> InetSocketAddress.createUnresolved(p.address().getHostString(), p.port())).toList();
      backend = new CoreBackend("leasehold://(proxied)", via, TTL.dividedBy(5), runtime());
    }

    @Override
    public LeaseBackend backend() {
      return backend;
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
