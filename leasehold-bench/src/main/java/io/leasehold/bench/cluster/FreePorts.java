package io.leasehold.bench.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * Free loopback ports, found by binding port 0. All sockets of one call stay bound until it has
 * every port, so one call never returns a port twice; between this call and the server's own bind
 * another process may still take one (a member then fails to start, and says so in its log).
 */
final class FreePorts {

  private static final int ATTEMPTS = 100;

  private FreePorts() {}

  /** {@return {@code count} distinct free ports} */
  static int[] take(int count) {
    return take(count, 1);
  }

  /**
   * {@return {@code count} ports {@code p}, each with {@code p .. p + width - 1} free and no two
   * ranges overlapping}: the core listens on its client port and on the next one up (Raft)
   */
  static int[] take(int count, int width) {
    List<ServerSocket> held = new ArrayList<>();
    try {
      int[] ports = new int[count];
      for (int i = 0; i < count; i++) {
        ports[i] = range(width, held);
      }
      return ports;
    } finally {
      for (ServerSocket s : held) {
        try {
          s.close();
        } catch (IOException e) {
          // Closing an unused listening socket does not fail in practice; the port is free anyway.
        }
      }
    }
  }

  private static int range(int width, List<ServerSocket> held) {
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      ServerSocket first = bind(0);
      int base = first.getLocalPort();
      List<ServerSocket> range = new ArrayList<>(List.of(first));
      boolean free = base + width - 1 <= 65535;
      for (int k = 1; k < width && free; k++) {
        try {
          range.add(new ServerSocket(base + k, 1, InetAddress.getLoopbackAddress()));
        } catch (IOException e) {
          free = false;
        }
      }
      if (free) {
        held.addAll(range);
        return base;
      }
      // Keep the failed range bound until the end, so port 0 does not hand out the same base again.
      held.addAll(range);
    }
    throw new IllegalStateException("found no " + width + " consecutive free loopback ports in " + ATTEMPTS + " attempts");
  }

  private static ServerSocket bind(int port) {
    try {
      return new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
    } catch (IOException e) {
      throw new UncheckedIOException("no free loopback port", e);
    }
  }
}
