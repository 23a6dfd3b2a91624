package io.leasehold.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
final class Link implements AutoCloseable {

  private static final int BUFFER_SIZE = 16 * 1024;

  private final String name;
  private final InetSocketAddress target;
  private final ServerSocket server;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Object gate = new Object();
  private int cuts;
  private volatile boolean closed;

  private Link(String name, InetSocketAddress target, ServerSocket server) {
    this.name = name;
    this.target = target;
    this.server = server;
  }

  /**
   * Opens a link.
   *
   * @param name for thread names and messages, e.g. {@code n1->n2}
   * @param listen where it accepts (port 0: any free port)
   * @param target where it forwards
   * @return the running link
   */
  static Link open(String name, InetSocketAddress listen, InetSocketAddress target) {
    try {
      ServerSocket server = new ServerSocket();
      server.setReuseAddress(true);
      server.bind(listen, 50);
      Link link = new Link(name, target, server);
      daemon("link-" + name + "-accept", link::acceptLoop).start();
      return link;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open link " + name + " on " + listen, e);
    }
  }

  /** {@return the port it accepts on} */
  int port() {
    return server.getLocalPort();
  }

  /** Stops forwarding (both ways, existing and new connections) until the matching heal. */
  void cut() {
    synchronized (gate) {
      cuts++;
    }
  }

  /** Undoes one {@link #cut()}; held bytes flow again, in order, once no cut is left. */
  void heal() {
    synchronized (gate) {
      if (cuts > 0) {
        cuts--;
      }
      gate.notifyAll();
    }
  }

  /** Undoes every cut. */
  void healAll() {
    synchronized (gate) {
      cuts = 0;
      gate.notifyAll();
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : sockets) {
      reset(s);
    }
    healAll();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return;
      }
      sockets.add(client);
      daemon("link-" + name + "-conn", () -> connect(client)).start();
    }
  }

  private void connect(Socket client) {
    if (!awaitOpen()) {
      reset(client);
      return;
    }
    Socket upstream = new Socket();
    sockets.add(upstream);
    try {
      client.setTcpNoDelay(true);
      upstream.setTcpNoDelay(true);
      upstream.connect(target, 5_000);
    } catch (IOException e) {
      // The target is down (killed node): the caller sees a reset, as it would without us.
      reset(client);
      reset(upstream);
      return;
    }
    daemon("link-" + name + "-up", () -> pump(client, upstream)).start();
    pump(upstream, client);
  }

  private void pump(Socket from, Socket to) {
    byte[] buffer = new byte[BUFFER_SIZE];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        if (!awaitOpen()) {
          break;
        }
        out.write(buffer, 0, n);
        out.flush();
      }
      if (awaitOpen()) {
        to.shutdownOutput();
      }
    } catch (IOException e) {
      reset(from);
      reset(to);
    }
  }

  private boolean awaitOpen() {
    synchronized (gate) {
      while (cuts > 0 && !closed) {
        try {
          gate.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
    return !closed;
  }

  private void reset(Socket socket) {
    sockets.remove(socket);
    try {
      if (!socket.isClosed()) {
        socket.setSoLinger(true, 0);
      }
    } catch (SocketException ignored) {
      // not connected; close is enough
    }
    try {
      socket.close();
    } catch (IOException ignored) {
      // nothing more to do
    }
  }

  private static Thread daemon(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public String toString() {
    return "Link[" + name + " :" + port() + " -> " + target + "]";
  }
}
