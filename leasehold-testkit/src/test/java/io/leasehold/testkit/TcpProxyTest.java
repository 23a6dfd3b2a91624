package io.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TcpProxyTest {

  private ServerSocket echo;
  private TcpProxy proxy;

  @BeforeEach
  void startEchoServerBehindProxy() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor =
        new Thread(
            () -> {
              while (!echo.isClosed()) {
                try {
                  Socket s = echo.accept();
                  Thread t = new Thread(() -> echoAll(s));
                  t.setDaemon(true);
                  t.start();
                } catch (IOException e) {
                  return;
                }
              }
            });
    acceptor.setDaemon(true);
    acceptor.start();
    proxy = TcpProxy.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), echo.getLocalPort()));
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    echo.close();
  }

  @Test
  void forwardsBothWays() throws IOException {
    try (Socket s = connect()) {
      send(s, "ping");
      assertThat(receive(s, 4, 5_000)).isEqualTo("ping");
    }
  }

  @Test
  void aBlackHoleHoldsBytesBackAndHealDeliversThemInOrder() throws IOException {
    try (Socket s = connect()) {
      send(s, "a");
      assertThat(receive(s, 1, 5_000)).isEqualTo("a");

      proxy.blackhole();
      send(s, "bc");
      assertThatThrownBy(() -> receive(s, 1, 300))
          .as("nothing may cross a black hole")
          .isInstanceOf(SocketTimeoutException.class);

      proxy.heal();
      assertThat(receive(s, 2, 5_000)).isEqualTo("bc");
    }
  }

  @Test
  void aBlackHoleAlsoHoldsNewConnectionsBack() throws IOException {
    proxy.blackhole();
    try (Socket s = connect()) {
      send(s, "x");
      assertThatThrownBy(() -> receive(s, 1, 300)).isInstanceOf(SocketTimeoutException.class);
      proxy.heal();
      assertThat(receive(s, 1, 5_000)).isEqualTo("x");
    }
  }

  @Test
  void droppedConnectionsAreReset() throws IOException {
    try (Socket s = connect()) {
      send(s, "a");
      assertThat(receive(s, 1, 5_000)).isEqualTo("a");
      proxy.dropConnections();
      assertThatThrownBy(() -> receive(s, 1, 5_000)).isInstanceOf(IOException.class);
    }
    try (Socket again = connect()) {
      send(again, "z");
      assertThat(receive(again, 1, 5_000)).as("new connections still work").isEqualTo("z");
    }
  }

  private Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(proxy.address(), 5_000);
    return s;
  }

  private static void send(Socket s, String text) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(text.getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /** Reads exactly {@code n} bytes; end of stream counts as a failure. */
  private static String receive(Socket s, int n, int timeoutMillis) throws IOException {
    s.setSoTimeout(timeoutMillis);
    InputStream in = s.getInputStream();
    byte[] buf = new byte[n];
    int off = 0;
    while (off < n) {
      int r = in.read(buf, off, n - off);
      if (r < 0) {
        throw new IOException("connection closed after " + off + " bytes");
      }
      off += r;
    }
    return new String(buf, StandardCharsets.UTF_8);
  }

  private static void echoAll(Socket s) {
    try (s) {
      s.getInputStream().transferTo(s.getOutputStream());
    } catch (IOException ignored) {
      // test over
    }
  }
}
