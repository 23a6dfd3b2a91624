package io.leasehold.kubernetes;

import io.leasehold.server.Certificates;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * HTTPS in front of the mock API server, as a real API server serves: its own certificate, and
 * every client must present a certificate signed by the client CA (a kube-apiserver's {@code
 * --client-ca-file}), or the handshake fails. Behind it, plain HTTP to the mock.
 *
 * <p>Why not the mock's own TLS: fabric8's mock web server (8.0.0, {@code useHttps}) serves a
 * self-signed certificate it makes itself and never asks for a client certificate (its {@code
 * clientAuth} is {@code NONE} with no way to change it), so it cannot show that the client
 * presents its certificate, nor refuse one that does not.
 */
final class TlsFront implements AutoCloseable {

  private final InetSocketAddress target;
  private final SSLServerSocket server;
  private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "tls-front");
    t.setDaemon(true);
    return t;
  });
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();

  /**
   * Starts on a free loopback port.
   *
   * @param target the mock API server (plain HTTP)
   * @param identity the server's certificate and key (its SANs name 127.0.0.1 and localhost)
   * @param serverCa the CA that signed {@code identity}, sent along in the chain
   * @param clientCa the CA whose client certificates are accepted
   */
  TlsFront(InetSocketAddress target, Certificates.Issued identity, X509Certificate serverCa,
      X509Certificate clientCa) {
    this.target = target;
    try {
      char[] none = new char[0];
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      keys.setKeyEntry("server", identity.key(), none, new Certificate[] {identity.certificate(), serverCa});
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, none);
      KeyStore trusted = KeyStore.getInstance("PKCS12");
      trusted.load(null, null);
      trusted.setCertificateEntry("client-ca", clientCa);
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trusted);
      SSLContext tls = SSLContext.getInstance("TLS");
      tls.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
      server = (SSLServerSocket) tls.getServerSocketFactory()
          .createServerSocket(0, 50, InetAddress.getLoopbackAddress());
      server.setNeedClientAuth(true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
    threads.execute(this::acceptLoop);
  }

  /** {@return the {@code https://} URL clients use} */
  String url() {
    return "https://127.0.0.1:" + server.getLocalPort() + "/";
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException closed) {
        return;
      }
      sockets.add(client);
      threads.execute(() -> serve((SSLSocket) client));
    }
  }

  private void serve(SSLSocket client) {
    Socket upstream = new Socket();
    sockets.add(upstream);
    try {
      client.startHandshake(); // refuses a client without a certificate of the client CA
      upstream.connect(target, 5_000);
      threads.execute(() -> pipe(upstream, client));
      pipe(client, upstream);
    } catch (IOException refusedOrClosed) {
      closeBoth(client, upstream);
    }
  }

  private void pipe(Socket from, Socket to) {
    byte[] buffer = new byte[16 * 1024];
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      for (int n; (n = in.read(buffer)) >= 0; ) {
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (IOException closed) {
      // the other side went away
    } finally {
      closeBoth(from, to);
    }
  }

  private void closeBoth(Socket a, Socket b) {
    for (Socket s : new Socket[] {a, b}) {
      sockets.remove(s);
      try {
        s.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
    threads.shutdownNow();
  }
}
