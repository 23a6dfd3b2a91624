package io.leasehold.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on loopback that puts a real network fault between a client and its store.
 *
 * <p>{@link #blackhole()} is a partition: nothing is forwarded either way, but connections stay
 * open and bytes are held back (in the proxy and in the kernel's socket buffers), so after {@link
 * #heal()} they arrive late and in order — what TCP does across a partition that ends before its
 * retransmissions give up. {@link #dropConnections()} resets every connection at once, as a
 * crashed peer or a restarted router would.
 *
 * <p>Point the client at {@link #address()} instead of the store. One proxy per store endpoint;
 * each accepted connection opens its own connection to the target.
 */
public final class TcpProxy implements AutoCloseable {

  private static final int BUFFER_SIZE = 16 * 1024;
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;

  private final InetSocketAddress target;
  private final ServerSocket server;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Object gate = new Object();
  private boolean blackholed;
  private volatile boolean closed;

  private TcpProxy(InetSocketAddress target, ServerSocket server) {
    this.target = target;
    this.server = server;
  }

  /**
   * Starts a proxy on a free loopback port.
   *
   * @param target where accepted connections are forwarded
   * @return the running proxy
   */
  public static TcpProxy start(InetSocketAddress target) {
    return start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), target);
  }

  /**
   * Starts a proxy on a given address, for topologies where the address is part of the setup
   * (e.g. one proxy per pair of nodes, each on its own loopback address).
   *
   * @param listen where it accepts connections (port 0: any free port)
   * @param target where accepted connections are forwarded
   * @return the running proxy
   */
  public static TcpProxy start(InetSocketAddress listen, InetSocketAddress target) {
    try {
      ServerSocket server = new ServerSocket();
      server.setReuseAddress(true);
      server.bind(listen, 50);
      TcpProxy proxy = new TcpProxy(target, server);
      daemon("tcp-proxy-accept-" + server.getLocalPort(), proxy::acceptLoop).start();
      return proxy;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open a proxy on " + listen + " for " + target, e);
    }
  }

  /** {@return the address clients connect to} */
  public InetSocketAddress address() {
    return new InetSocketAddress(server.getInetAddress(), server.getLocalPort());
  }

  /** {@return the port clients connect to, on the loopback address} */
  public int port() {
    return server.getLocalPort();
  }

  /** {@return where the proxy forwards to} */
  public InetSocketAddress target() {
    return target;
  }

  /** Stops forwarding in both directions, on existing and new connections, until {@link #heal()}. */
  public void blackhole() {
    synchronized (gate) {
      blackholed = true;
    }
  }

  /** Forwards again; bytes held back during the black hole are delivered first, in order. */
  public void heal() {
    synchronized (gate) {
      blackholed = false;
      gate.notifyAll();
    }
  }

  /** {@return whether traffic is black-holed} */
  public boolean isBlackholed() {
    synchronized (gate) {
      return blackholed;
    }
  }

  /** Resets every open connection (both sides see a reset); new connections are still accepted. */
  public void dropConnections() {
    for (Socket socket : sockets) {
      reset(socket);
    }
  }

  /** Stops accepting, resets every connection and releases a black hole's waiting threads. */
  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    dropConnections();
    heal();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      sockets.add(client);
      daemon("tcp-proxy-conn-" + client.getPort(), () -> connect(client)).start();
    }
  }

  private void connect(Socket client) {
    // A partition also holds back the connection's handshake with the target.
    if (!awaitOpen()) {
      reset(client);
      return;
    }
    Socket upstream = new Socket();
    sockets.add(upstream);
    try {
      upstream.setTcpNoDelay(true);
      client.setTcpNoDelay(true);
      // A target that is down (a killed node) answers at once; one that hangs must not hold us.
      upstream.connect(target, CONNECT_TIMEOUT_MILLIS);
    } catch (IOException e) {
      reset(client);
      reset(upstream);
      return;
    }
    daemon("tcp-proxy-up-" + client.getPort(), () -> pump(client, upstream)).start();
    pump(upstream, client);
  }

  /** Copies bytes from {@code from} to {@code to}, holding each chunk while black-holed. */
  private void pump(Socket from, Socket to) {
    byte[] buffer = new byte[BUFFER_SIZE];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      while (true) {
        int n = in.read(buffer);
        if (n < 0) {
          break;
        }
        if (!awaitOpen()) {
          break;
        }
        out.write(buffer, 0, n);
        out.flush();
      }
      // A clean end of stream on one side is passed on, once the partition allows it.
      if (awaitOpen()) {
        to.shutdownOutput();
      }
    } catch (IOException e) {
      reset(from);
      reset(to);
    }
  }

  /** Waits while black-holed; false when the proxy closed meanwhile. */
  private boolean awaitOpen() {
    synchronized (gate) {
      while (blackholed && !closed) {
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
        socket.setSoLinger(true, 0); // RST, not FIN: the peer sees the connection die
      }
    } catch (SocketException ignored) {
      // not connected yet; closing is enough
    }
    try {
      socket.close();
    } catch (IOException ignored) {
      // nothing more to do
    }
  }

  private static Thread daemon(String name, Runnable body) {
    Thread thread = new Thread(body, name);
    thread.setDaemon(true);
    return thread;
  }

  @Override
  public String toString() {
    return "TcpProxy[" + address() + " -> " + target + (isBlackholed() ? ", black-holed" : "") + "]";
  }
}
