package io.leasehold.server.edge;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.IoHandlerFactory;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Caps the client connections a node holds open: in all ({@code --max-connections}) and from one
 * IP address ({@code --max-connections-per-address}). A connection over a cap is closed the moment
 * it is accepted, before its handshake, so it costs the node one accept and no file descriptor
 * kept, no TLS work and no HTTP/2 state; the client sees its connection closed (gRPC says
 * {@code UNAVAILABLE}) and tries again after its back-off, as for a node that is down. The
 * connections already open are not touched.
 *
 * <p>gRPC has no such cap, and one cannot be had from a {@code ServerTransportFilter}: it hears of
 * a connection only after the handshake and cannot close it. So the cap sits in front of gRPC, as
 * a handler on the listening socket's own pipeline, ahead of the one that hands each accepted
 * connection to gRPC: it sees every connection first. That needs the node to make the listening
 * socket and its event loops itself ({@link #serveOn}), the same kinds gRPC picks (epoll where
 * the platform has it, NIO elsewhere).
 */
@ChannelHandler.Sharable
public final class ConnectionCap extends ChannelInboundHandlerAdapter {

  private static final Logger log = LoggerFactory.getLogger(ConnectionCap.class);

  /** A refused connection is logged at most this often (with how many were refused since). */
  private static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final int max;
  private final int maxPerAddress;
  private final AtomicInteger open = new AtomicInteger();
  private final ConcurrentHashMap<InetAddress, Integer> openFrom = new ConcurrentHashMap<>();
  private final LongAdder refused = new LongAdder();
  private final AtomicLong lastWarnedNanos = new AtomicLong(System.nanoTime() - WARN_EVERY_NANOS);
  private final AtomicLong refusedSinceWarned = new AtomicLong();

  /**
   * @param max connections open at once in all
   * @param maxPerAddress connections open at once from one IP address
   */
  public ConnectionCap(int max, int maxPerAddress) {
    this.max = max;
    this.maxPerAddress = maxPerAddress;
  }

  /** The event loops a node's client port runs on; close them after the gRPC server has stopped. */
  public static final class EventLoops implements AutoCloseable {
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;

    private EventLoops(EventLoopGroup boss, EventLoopGroup workers) {
      this.boss = boss;
      this.workers = workers;
    }

    @Override
    public void close() {
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }
  }

  /**
   * Makes {@code server} listen on a socket this cap guards, with event loops of their own (one
   * thread accepting, Netty's default count, twice the processors, serving the connections: what
   * gRPC would have made).
   *
   * @return the event loops, to close once the server has stopped
   */
  public EventLoops serveOn(NettyServerBuilder server, String nodeId) {
    boolean epoll = Epoll.isAvailable();
    DefaultThreadFactory accepting = new DefaultThreadFactory("leasehold-" + nodeId + "-accept", true);
    DefaultThreadFactory serving = new DefaultThreadFactory("leasehold-" + nodeId + "-client", true);
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    EventLoops loops =
        new EventLoops(new MultiThreadIoEventLoopGroup(1, accepting, io), new MultiThreadIoEventLoopGroup(0, serving, io));
    server
        .bossEventLoopGroup(loops.boss)
        .workerEventLoopGroup(loops.workers)
        .channelFactory(() -> {
          ServerChannel listening = epoll ? new EpollServerSocketChannel() : new NioServerSocketChannel();
          // Added now, before the server bootstrap adds the handler that hands each accepted
          // connection on: so this one sees it first.
          listening.pipeline().addLast(this);
          return listening;
        });
    return loops;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof Channel accepted)) {
      ctx.fireChannelRead(msg);
      return;
    }
    InetAddress from = addressOf(accepted.remoteAddress());
    String over = admit(from);
    if (over != null) {
      refused.increment();
      warn(accepted.remoteAddress(), over);
      accepted.unsafe().closeForcibly(); // not registered with an event loop yet: closed here
      return;
    }
    accepted.closeFuture().addListener(closed -> leave(from));
    ctx.fireChannelRead(accepted);
  }

  /** {@return null when a connection from {@code from} may open (and counts it); else which cap it is over} */
  String admit(InetAddress from) {
    if (open.incrementAndGet() > max) {
      open.decrementAndGet();
      return max + " connections are open, the most --max-connections allows";
    }
    if (from == null) {
      return null; // no IP address (none on a TCP port): counted in all only
    }
    int fromThere = openFrom.merge(from, 1, Integer::sum);
    if (fromThere > maxPerAddress) {
      leave(from);
      return maxPerAddress + " connections are open from " + from.getHostAddress()
          + ", the most --max-connections-per-address allows";
    }
    return null;
  }

  /** Counts a connection from {@code from} as closed. */
  void leave(InetAddress from) {
    open.decrementAndGet();
    if (from != null) {
      openFrom.computeIfPresent(from, (address, n) -> n == 1 ? null : n - 1);
    }
  }

  private static InetAddress addressOf(SocketAddress address) {
    return address instanceof InetSocketAddress inet ? inet.getAddress() : null;
  }

  private void warn(SocketAddress from, String over) {
    long since = refusedSinceWarned.incrementAndGet();
    long now = System.nanoTime();
    long last = lastWarnedNanos.get();
    if (now - last >= WARN_EVERY_NANOS && lastWarnedNanos.compareAndSet(last, now)) {
      refusedSinceWarned.addAndGet(-since);
      log.warn(
          "refused a client connection from {}: {} ({} refused in the last {} s; leasehold_client_connections_refused_total"
              + " counts them). Raise the flag if the clients are legitimate; else find the host that opens them",
          from, over, since, TimeUnit.NANOSECONDS.toSeconds(now - last));
    }
  }

  /**
   * File descriptors a node needs besides its client connections: its log segments and
   * snapshots, its peers' connections, the JVM's own jars and sockets, with room to spare.
   */
  static final long DESCRIPTORS_BESIDES_CLIENTS = 1_024;

  /**
   * {@return a warning when {@code maxConnections} client connections and what the node needs
   * besides would not fit in {@code descriptorLimit} (the process's limit; negative when
   * unknown), naming both fixes; null when they fit}
   */
  public static String descriptorShortfall(int maxConnections, long descriptorLimit) {
    if (descriptorLimit < 0 || maxConnections + DESCRIPTORS_BESIDES_CLIENTS <= descriptorLimit) {
      return null;
    }
    return "the process may open " + descriptorLimit + " files, fewer than --max-connections " + maxConnections
        + " and the " + DESCRIPTORS_BESIDES_CLIENTS + " the node needs besides: a flood of connections could leave it"
        + " none for its log and snapshots. Raise the limit (ulimit -n, LimitNOFILE= in a systemd unit) or lower"
        + " --max-connections";
  }

  /** {@return the process's limit on open files; -1 when the platform does not say} */
  public static long descriptorLimit() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix
        ? unix.getMaxFileDescriptorCount()
        : -1;
  }

  /** {@return the connections open now, counted from their accept} */
  public int open() {
    return open.get();
  }

  /** {@return the connections closed at their accept, over a cap, since the node started} */
  public long refused() {
    return refused.sum();
  }
}
