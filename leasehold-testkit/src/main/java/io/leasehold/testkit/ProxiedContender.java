package io.leasehold.testkit;

import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.ProcessGate;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A contender for a network backend: its own {@link TcpProxy} to each store endpoint and its own
 * threads behind a {@link ProcessGate}. A subclass makes its backend with {@link #runtime()} and
 * the proxies' addresses, and says how its client vanishes in a crash.
 *
 * <ul>
 *   <li>cut off: every proxy black-holes both ways; heal lets the held bytes through;</li>
 *   <li>pause: the gate freezes the lease engine's timers and callbacks, and the proxies
 *       black-hole the client's own threads (its keep-alives); on resume, the timers that fell
 *       due run first, as in a woken process, then the traffic flows;</li>
 *   <li>crash: the gate stops for good, nothing more leaves the process, and {@link #abandon()}
 *       drops the client without a release.</li>
 * </ul>
 */
public abstract class ProxiedContender implements Contender {

  private final List<TcpProxy> proxies = new ArrayList<>();
  private final ProcessGate gate = new ProcessGate();
  private final LeaseRuntime threads;
  private boolean crashed;
  private boolean paused;
  private boolean closed;

  /**
   * Starts one proxy per endpoint and the contender's threads.
   *
   * @param name names the threads
   * @param endpoints the store's endpoints, in order
   */
  protected ProxiedContender(String name, List<InetSocketAddress> endpoints) {
    threads = LeaseRuntime.system(name);
    for (InetSocketAddress endpoint : endpoints) {
      proxies.add(TcpProxy.start(endpoint));
    }
  }

  /** {@return the proxies, one per endpoint, in order: the client connects to these} */
  protected final List<TcpProxy> proxies() {
    return proxies;
  }

  /** {@return the runtime the backend must be made with: its timers and callbacks are gated} */
  protected final LeaseRuntime runtime() {
    return gate.wrap(threads);
  }

  /** {@return the ungated threads underneath, for a backend that needs them} */
  protected final LeaseRuntime threads() {
    return threads;
  }

  /** Drops the client at once, without releasing or saying goodbye to the store. */
  protected abstract void abandon();

  /** Runs after a crashed contender's connections were reset, to free what the client holds. */
  protected void closeAfterCrash() {}

  /** Runs after a heal; a client that reconnects on its own schedule may wait for it here. */
  protected void afterHeal() {}

  @Override
  public void cutOff() {
    proxies.forEach(TcpProxy::blackhole);
  }

  @Override
  public void heal() {
    proxies.forEach(TcpProxy::heal);
    afterHeal();
  }

  @Override
  public void crash() {
    crashed = true;
    gate.crash();
    proxies.forEach(TcpProxy::blackhole);
    abandon();
  }

  @Override
  public void pause() {
    paused = true;
    gate.pause();
    proxies.forEach(TcpProxy::blackhole);
  }

  @Override
  public void resume() {
    paused = false;
    gate.resume();
    // What fell due during the pause (deadline checks among it) runs before any reply arrives.
    CompletableFuture<Void> drained = new CompletableFuture<>();
    threads.timers().schedule(() -> drained.complete(null), 0);
    drained.orTimeout(10, TimeUnit.SECONDS).join();
    proxies.forEach(TcpProxy::heal);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (crashed) {
        proxies.forEach(TcpProxy::close);
        closeAfterCrash();
      } else {
        if (paused) {
          resume();
        }
        proxies.forEach(TcpProxy::heal);
        backend().close();
      }
    } finally {
      proxies.forEach(TcpProxy::close);
      threads.close();
    }
  }
}
