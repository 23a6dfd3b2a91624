package io.leasehold.client;

import io.leasehold.LeaseBackend;
import io.leasehold.server.Peer;
import io.leasehold.testkit.ProxiedContender;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * One simulated process on a real core, for fault tests: its own TCP proxies to every node and
 * its own gated threads, so that it can be killed (no release, nothing more sent) or paused (its
 * lease engine frozen, its traffic held back). It lives in the client's package because the core
 * backend's constructor that takes a runtime is package-private, as in the client's own
 * {@code CoreFixture}.
 */
public final class ProxiedCoreProcess extends ProxiedContender {
  private final CoreBackend backend;

  /**
   * Starts the proxies and connects through them.
   *
   * @param peers the cluster's nodes
   * @param attemptTimeout how long one call to a node may take before the client tries another
   */
  public ProxiedCoreProcess(List<Peer> peers, Duration attemptTimeout) {
    super("core-process", peers.stream().map(p -> new InetSocketAddress(p.host(), p.clientPort())).toList());
    List<InetSocketAddress> via =
        proxies().stream().map(p -> InetSocketAddress.createUnresolved(p.address().getHostString(), p.port())).toList();
    backend = new CoreBackend("leasehold://(proxied)", via, attemptTimeout, runtime());
  }

  @Override
  public LeaseBackend backend() {
    return backend;
  }

  @Override
  protected void abandon() {
    backend.abandon();
  }
}
