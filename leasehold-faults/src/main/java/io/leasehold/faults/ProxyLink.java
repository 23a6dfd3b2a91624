package io.leasehold.faults;

import io.leasehold.testkit.TcpProxy;
import java.net.InetSocketAddress;

/**
 * One directed link of the harness's network: a TCP proxy listening at a fixed address that
 * forwards every connection to one target, and that the nemesis can cut.
 *
 * <p>A cut is a black hole, not a reset: connections stay open and bytes wait (in the proxy and in
 * the kernel's buffers) until the link is healed, as across a real partition that ends before TCP
 * gives up. New connections are accepted but not forwarded while cut. Cuts nest: the link carries
 * traffic only when every {@link #cut()} was matched by a {@link #heal()}, so a node partition and a
 * client partition that both touch this link do not heal each other.
 */
final class ProxyLink implements AutoCloseable {

  private final String name;
  private final TcpProxy proxy;
  private int cuts; // guarded by this

  private ProxyLink(String name, TcpProxy proxy) {
    this.name = name;
    this.proxy = proxy;
  }

  /**
   * Opens a link.
   *
   * @param name for messages, e.g. {@code n1->n2}
   * @param listen where it accepts (port 0: any free port)
   * @param target where it forwards
   * @return the running link
   */
  static ProxyLink open(String name, InetSocketAddress listen, InetSocketAddress target) {
    return new ProxyLink(name, TcpProxy.start(listen, target));
  }

  /** {@return the port it accepts on} */
  int port() {
    return proxy.port();
  }

  /** Stops forwarding (both ways, existing and new connections) until the matching heal. */
  synchronized void cut() {
    if (cuts++ == 0) {
      proxy.blackhole();
    }
  }

  /** Undoes one {@link #cut()}; held bytes flow again, in order, once no cut is left. */
  synchronized void heal() {
    if (cuts > 0 && --cuts == 0) {
      proxy.heal();
    }
  }

  /** Undoes every cut. */
  synchronized void healAll() {
    cuts = 0;
    proxy.heal();
  }

  @Override
  public void close() {
    proxy.close();
  }

  @Override
  public String toString() {
    return "ProxyLink[" + name + " :" + port() + " -> " + proxy.target() + "]";
  }
}
