package io.leasehold.bench.cluster;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * One-shot requests to a member on loopback, on a plain socket: etcd's HTTP endpoints and
 * ZooKeeper's four-letter words. A socket per request, so nothing lingers between polls and a
 * killed or restarted member is seen at once.
 */
final class Loopback {

  /** A member that is up answers in milliseconds; a stuck one must not stall the caller. */
  static final int TIMEOUT_MILLIS = 2_000;

  private static final int MAX_REPLY_BYTES = 64 * 1024;

  private Loopback() {}

  /**
   * Sends {@code request} to {@code port} and reads until the member closes the connection.
   *
   * @return the reply, or empty when the member cannot be reached or does not answer in time
   */
  static Optional<String> exchange(int port, String request) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), TIMEOUT_MILLIS);
      s.setSoTimeout(TIMEOUT_MILLIS);
      OutputStream out = s.getOutputStream();
      out.write(request.getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] reply = in.readNBytes(MAX_REPLY_BYTES);
      return Optional.of(new String(reply, StandardCharsets.UTF_8));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * An HTTP/1.0 request (the server closes the connection after its reply).
   *
   * @return the body of a 200 reply, or empty for any other reply or none
   */
  static Optional<String> http(int port, String method, String path, String jsonBody) {
    StringBuilder request = new StringBuilder();
    request.append(method).append(' ').append(path).append(" HTTP/1.0\r\nHost: 127.0.0.1:").append(port).append("\r\n");
    if (jsonBody != null) {
      request
          .append("Content-Type: application/json\r\nContent-Length: ")
          .append(jsonBody.getBytes(StandardCharsets.UTF_8).length)
          .append("\r\n\r\n")
          .append(jsonBody);
    } else {
      request.append("\r\n");
    }
    return exchange(port, request.toString())
        .filter(r -> r.startsWith("HTTP/1.") && r.length() > 12 && r.startsWith(" 200", 8))
        .map(r -> r.indexOf("\r\n\r\n") < 0 ? "" : r.substring(r.indexOf("\r\n\r\n") + 4));
  }
}
