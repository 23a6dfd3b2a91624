package io.leasehold.kubernetes;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.leasehold.LeaseBackend;
import io.leasehold.testkit.Contender;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.ProxiedContender;
import io.leasehold.testkit.TimeControl;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The contract suite's fixture for the Kubernetes backend: one mock API server per test, and per
 * contender its own TCP proxy, HTTP client and threads. A partition black-holes the proxy; a pause
 * freezes the contender's timers and callbacks (through which every reply reaches its leases) and
 * black-holes its traffic; a crash drops everything without a release.
 */
final class KubernetesFixture implements ContractFixture {

  private static final AtomicInteger CONTENDERS = new AtomicInteger();

  private final MockApiServer server = new MockApiServer();

  MockApiServer server() {
    return server;
  }

  @Override
  public KubernetesContender newContender() {
    return new KubernetesContender(server);
  }

  @Override
  public TimeControl time() {
    return TimeControl.realTime();
  }

  /**
   * 3 s, not Kubernetes' smallest (1 s): the suite's operation timeout is a fifth of the TTL, and
   * one acquire is up to three HTTP round trips through a proxy to a mock whose every request scans
   * all stored objects (a thousand by the end of the concurrent scenario). With 1 s and 2 s, one of
   * the scenario's 4,000 acquires now and then timed out on a loaded two-core machine, which that
   * scenario counts as a failure.
   */
  @Override
  public Duration ttl() {
    return Duration.ofSeconds(3);
  }

  /**
   * 75 s, not ten TTLs (30 s): fabric8's mock API server (8.0.0) stops answering anyone for 30 s
   * when a client closes a watch while an event is being sent to it. Its event loop, in the
   * watch's close handler, waits for the watch's sending thread to end, and that thread waits (up
   * to 30 s) for the event loop to write the event. The contract suite's observer clauses cancel
   * subscriptions while leases change, so now and then one waited out the stall and failed. A
   * real API server does not stall; its clients see nothing of it.
   */
  @Override
  public Duration patience() {
    return Duration.ofSeconds(75);
  }

  @Override
  public void revokeInStore(String leaseName) {
    server
        .admin()
        .resources(Lease.class)
        .inNamespace(MockApiServer.NAMESPACE)
        .withName(KubernetesLeaseNames.objectName(leaseName))
        .delete();
  }

  @Override
  public boolean observesLeases() {
    return true;
  }

  @Override
  public void close() {
    server.close();
  }

  /** One process: its own proxy, client and threads. */
  static final class KubernetesContender extends ProxiedContender {
    private final KubernetesBackend backend;

    KubernetesContender(MockApiServer server) {
      super("k8s-" + CONTENDERS.incrementAndGet(), List.of(server.address()));
      KubernetesClient client = MockApiServer.client(proxies().get(0).address());
      // One read first, so the client's start-up and first connection are not charged to the
      // first lease operation of a test (its timeout is a fifth of the TTL).
      client.resources(Lease.class).inNamespace(MockApiServer.NAMESPACE).withName("warm-up").get();
      backend = new KubernetesBackend(client, MockApiServer.NAMESPACE, runtime(), threads(), Clock.systemUTC());
    }

    @Override
    public LeaseBackend backend() {
      return backend;
    }

    @Override
    protected void abandon() {
      // Nothing more gets through the black-holed proxy: no release ever reaches the server.
    }

    @Override
    protected void closeAfterCrash() {
      backend.close(); // frees the client; its releases die on the closed proxy
    }
  }
}
