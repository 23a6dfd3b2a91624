package io.leasehold.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * Small loopback helpers for the store clusters: one-shot requests on a plain socket (etcd's HTTP
 * endpoints, ZooKeeper's four-letter words; a socket per request, so a killed or frozen member is
 * seen at once) and free ports.
 */
final class Wire {

  private static final int TIMEOUT_MILLIS = 2_000;
  private static final int MAX_REPLY_BYTES = 256 * 1024;

  private Wire() {}

  /** {@return the reply to {@code request}, read until the server closes, or empty} */
  static Optional<String> exchange(InetSocketAddress to, String request) {
    try (Socket s = new Socket()) {
      s.connect(to, TIMEOUT_MILLIS);
      s.setSoTimeout(TIMEOUT_MILLIS);
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = s.getInputStream();
      return Optional.of(new String(in.readNBytes(MAX_REPLY_BYTES), StandardCharsets.UTF_8));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** {@return the body of a 200 reply to an HTTP/1.0 request, or empty} */
  static Optional<String> http(InetSocketAddress to, String method, String path, String jsonBody) {
    StringBuilder r = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.0\r\nHost: ")
        .append(to.getHostString()).append(':').append(to.getPort()).append("\r\n");
    if (jsonBody != null) {
      r.append("Content-Type: application/json\r\nContent-Length: ")
          .append(jsonBody.getBytes(StandardCharsets.UTF_8).length).append("\r\n\r\n").append(jsonBody);
    } else {
      r.append("\r\n");
    }
    return exchange(to, r.toString())
        .filter(reply -> reply.startsWith("HTTP/1.") && reply.startsWith(" 200", 8))
        .map(reply -> reply.indexOf("\r\n\r\n") < 0 ? "" : reply.substring(reply.indexOf("\r\n\r\n") + 4));
  }

  /**
   * {@return {@code n} consecutive ports, from P to P + n - 1, that are free on every one of {@code
   * ips}} Another process can still take one before it is bound; the member then fails to start
   * and its log says why.
   */
  static int freePorts(List<String> ips, int n) throws IOException {
    for (int attempt = 0; attempt < 200; attempt++) {
      int p;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(ips.get(0)))) {
        p = s.getLocalPort();
      }
      if (p + n - 1 > 65535) {
        continue;
      }
      boolean free = true;
      for (String ip : ips) {
        for (int port = p; port < p + n && free; port++) {
          try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(ip, port));
          } catch (IOException e) {
            free = false;
          }
        }
      }
      if (free) {
        return p;
      }
    }
    throw new IOException("no " + n + " consecutive free ports on " + ips);
  }
}
