package io.leasehold.server;

import io.grpc.ChannelCredentials;
import io.grpc.ServerCredentials;
import io.grpc.TlsChannelCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.grpc.util.CertificateUtils;
import io.leasehold.spi.SecretFiles;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's TLS material, loaded from its {@link TlsConfig} files into a key manager and a trust
 * manager that every port of the node shares (gRPC's client port, the settings checks it makes of
 * the other nodes, and Ratis's server, client and admin traffic). When the files change, the new
 * certificates are swapped into the same managers, so new handshakes use them without a restart.
 *
 * <p>grpc-util's own periodic reload refuses periods below a minute; this class checks the files'
 * contents itself, every {@link TlsConfig#reloadEvery()}.
 */
public final class NodeTls implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(NodeTls.class);

  private final TlsConfig config;
  private final String node;
  private final AdvancedTlsX509KeyManager keys = new AdvancedTlsX509KeyManager();
  private final AdvancedTlsX509TrustManager trust;
  /** What the ports are given: {@link #trust}, naming no authority to clients (see there). */
  private final X509ExtendedTrustManager offered;
  private final ScheduledExecutorService reloader;
  /** The contents last loaded (cert, key, ca), to see a change; only the reloader touches them. */
  private byte[][] loaded;

  private NodeTls(TlsConfig config, String node) throws GeneralSecurityException {
    this.config = config;
    this.node = node;
    // Host names are checked when this node connects to another (its certificate must name the
    // host in --peers), never on a client's certificate: the same manager serves both sides.
    this.trust =
        AdvancedTlsX509TrustManager.newBuilder()
            .setVerification(AdvancedTlsX509TrustManager.Verification.CERTIFICATE_AND_HOST_NAME_VERIFICATION)
            .build();
    this.offered = new NamingNoAuthority(trust);
    this.reloader =
        Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("leasehold-tls-reload-" + node));
  }

  /**
   * Reads the files and starts checking them for changes.
   *
   * @throws StartRefusedException naming the file that is missing or unusable
   */
  static NodeTls load(TlsConfig config, String node) {
    NodeTls tls;
    try {
      tls = new NodeTls(config, node);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("TLS trust manager could not be made: " + e.getMessage(), e);
    }
    byte[][] files = read(config, node);
    try {
      tls.apply(files);
    } catch (GeneralSecurityException | IOException | RuntimeException e) {
      tls.close();
      throw new StartRefusedException("node " + node + " refuses to start: " + e.getMessage());
    }
    long every = config.reloadEvery().toMillis();
    tls.reloader.scheduleWithFixedDelay(tls::reloadIfChanged, every, every, TimeUnit.MILLISECONDS);
    return tls;
  }

  private static byte[][] read(TlsConfig config, String node) {
    return new byte[][] {
      readOne(config.cert(), "certificate (--tls-cert)", node, false),
      readOne(config.key(), "private key (--tls-key)", node, true),
      readOne(config.ca(), "CA certificates (--tls-ca)", node, false)
    };
  }

  private static byte[] readOne(Path file, String what, String node, boolean secret) {
    if (secret) {
      // At every reload too: a key made readable by others since is not taken, the last good one stays.
      try {
        SecretFiles.requireOwnerOnly(file, "node " + node + " refuses to start: its TLS " + what + " file " + file);
      } catch (IllegalArgumentException e) {
        throw new StartRefusedException(e.getMessage());
      }
    }
    try {
      return Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new StartRefusedException("node " + node + " refuses to start: its TLS " + what + " file " + file + " does not exist");
    } catch (IOException e) {
      throw new StartRefusedException(
          "node " + node + " refuses to start: its TLS " + what + " file " + file + " cannot be read: " + e);
    }
  }

  /** Parses all three files, checks that the key fits the certificate, then swaps them in. */
  private void apply(byte[][] files) throws GeneralSecurityException, IOException {
    X509Certificate[] chain = parseCertificates(files[0], "certificate (--tls-cert) " + config.cert());
    PrivateKey key;
    try {
      key = CertificateUtils.getPrivateKey(new ByteArrayInputStream(files[1]));
    } catch (GeneralSecurityException | IOException | RuntimeException e) {
      throw new GeneralSecurityException(
          "its TLS private key (--tls-key) " + config.key() + " is not a PEM PKCS#8 RSA or EC key: " + e.getMessage(), e);
    }
    X509Certificate[] roots = parseCertificates(files[2], "CA certificates (--tls-ca) " + config.ca());
    checkKeyFits(key, chain[0]);
    trust.updateTrustCredentials(roots);
    keys.updateIdentityCredentials(chain, key);
    loaded = files;
  }

  private static X509Certificate[] parseCertificates(byte[] pem, String what) throws GeneralSecurityException {
    X509Certificate[] certs;
    try {
      certs = CertificateUtils.getX509Certificates(new ByteArrayInputStream(pem));
    } catch (GeneralSecurityException | RuntimeException e) {
      throw new GeneralSecurityException("its TLS " + what + " is not a PEM certificate file: " + e.getMessage(), e);
    }
    if (certs.length == 0) {
      throw new GeneralSecurityException("its TLS " + what + " holds no PEM certificate");
    }
    return certs;
  }

  /** A rotation caught between writing the certificate and the key would break every handshake. */
  private void checkKeyFits(PrivateKey key, X509Certificate cert) throws GeneralSecurityException {
    String algorithm = key.getAlgorithm().equals("EC") ? "SHA256withECDSA" : "SHA256with" + key.getAlgorithm();
    byte[] probe = "leasehold".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    Signature sign = Signature.getInstance(algorithm);
    sign.initSign(key);
    sign.update(probe);
    byte[] signature = sign.sign();
    Signature verify = Signature.getInstance(algorithm);
    verify.initVerify(cert.getPublicKey());
    verify.update(probe);
    if (!verify.verify(signature)) {
      throw new GeneralSecurityException(
          "its TLS private key (--tls-key) " + config.key() + " does not belong to the certificate (--tls-cert) " + config.cert());
    }
  }

  private void reloadIfChanged() {
    byte[][] now;
    try {
      now = read(config, node);
    } catch (RuntimeException e) {
      log.warn("node {}: TLS files not reloaded, keeping the last good ones: {}", node, e.getMessage());
      return;
    }
    if (Arrays.deepEquals(now, loaded)) {
      return;
    }
    try {
      apply(now);
      log.info("node {}: TLS certificates reloaded from {}, {} and {}", node, config.cert(), config.key(), config.ca());
    } catch (GeneralSecurityException | IOException | RuntimeException e) {
      // Perhaps half written: the next check tries again, the last good ones stay in use.
      log.warn("node {}: TLS files changed but cannot be used yet, keeping the last good ones: {}", node, e.getMessage());
    }
  }

  /** {@return the credentials of the client port} */
  ServerCredentials serverCredentials() {
    return TlsServerCredentials.newBuilder()
        .keyManager(keys)
        .trustManager(offered)
        .clientAuth(
            config.clientAuth() == TlsConfig.ClientAuth.REQUIRE
                ? TlsServerCredentials.ClientAuth.REQUIRE
                : TlsServerCredentials.ClientAuth.OPTIONAL)
        .build();
  }

  /** {@return the credentials this node uses to reach the other nodes' client ports} */
  ChannelCredentials channelCredentials() {
    return TlsChannelCredentials.newBuilder().keyManager(keys).trustManager(offered).build();
  }

  /**
   * {@return Ratis's parameters: mutual TLS on its server, client and admin traffic}, where a
   * connecting party must show a node's certificate, not merely one from the same authority (see
   * {@link PeersOnly}).
   *
   * @param peerHosts the hosts of the cluster's nodes, as in {@code --peers}
   */
  Parameters ratisParameters(java.util.Set<String> peerHosts) {
    GrpcTlsConfig conf = new GrpcTlsConfig(keys, new PeersOnly(trust, peerHosts), true);
    Parameters p = new Parameters();
    GrpcConfigKeys.TLS.setConf(p, conf);
    GrpcConfigKeys.Server.setTlsConf(p, conf);
    GrpcConfigKeys.Client.setTlsConf(p, conf);
    GrpcConfigKeys.Admin.setTlsConf(p, conf);
    return p;
  }

  @Override
  public void close() {
    reloader.shutdownNow();
  }

  /**
   * Checks as the rotating trust manager does, but names no accepted authority. A TLS server
   * sends the names of the authorities it accepts with its request for a client certificate, and
   * Netty takes that list once, when the port opens: after a rotation to a new authority, clients
   * whose certificates come from it would find their authority missing from the list and show no
   * certificate at all (CoreTlsTest saw them refused until a restart, though the node trusted them). An empty list
   * lets a client show its certificate, which the node then checks against what it trusts now.
   */
  static class NamingNoAuthority extends X509ExtendedTrustManager {
    private final X509ExtendedTrustManager delegate;

    NamingNoAuthority(X509ExtendedTrustManager delegate) {
      this.delegate = delegate;
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
      delegate.checkClientTrusted(chain, authType, socket);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
      delegate.checkServerTrusted(chain, authType, socket);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
      delegate.checkClientTrusted(chain, authType, engine);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
      delegate.checkServerTrusted(chain, authType, engine);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
      delegate.checkClientTrusted(chain, authType);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
      delegate.checkServerTrusted(chain, authType);
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }
  }

  /**
   * The Raft port's check of whoever connects: trusted by the authority, as on the client port,
   * and a certificate of one of the cluster's nodes — it names one of the hosts in {@code --peers}
   * as a subject alternative name, and if it limits its use (extended key usage), it allows TLS
   * servers. Clients hold certificates from the same authority; without this check any of them
   * could open the Raft port, vote, append entries or install a snapshot (found in review).
   */
  static final class PeersOnly extends NamingNoAuthority {
    private static final String SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
    private static final int DNS_NAME = 2;
    private static final int IP_ADDRESS = 7;

    private final java.util.Set<String> peerHosts;

    /** @param delegate the authority's check, as on the client port */
    PeersOnly(X509ExtendedTrustManager delegate, java.util.Set<String> peerHosts) {
      super(delegate);
      this.peerHosts = peerHosts.stream()
          .map(h -> h.toLowerCase(java.util.Locale.ROOT))
          .collect(java.util.stream.Collectors.toUnmodifiableSet());
    }

    /** Throws unless {@code chain}'s first certificate is a node's. */
    void checkIsNode(X509Certificate[] chain) throws CertificateException {
      if (chain == null || chain.length == 0) {
        throw new CertificateException("the Raft port takes nodes only: no certificate was shown");
      }
      X509Certificate leaf = chain[0];
      java.util.List<String> usages = leaf.getExtendedKeyUsage();
      if (usages != null && !usages.contains(SERVER_AUTH)) {
        throw new CertificateException(
            "the Raft port takes nodes only: certificate '" + leaf.getSubjectX500Principal().getName()
                + "' is for TLS clients only (extended key usage without serverAuth)");
      }
      java.util.Collection<java.util.List<?>> names = leaf.getSubjectAlternativeNames();
      if (names != null) {
        for (java.util.List<?> name : names) {
          Object type = name.get(0);
          if ((Integer.valueOf(DNS_NAME).equals(type) || Integer.valueOf(IP_ADDRESS).equals(type))
              && peerHosts.contains(String.valueOf(name.get(1)).toLowerCase(java.util.Locale.ROOT))) {
            return;
          }
        }
      }
      throw new CertificateException(
          "the Raft port takes nodes only: certificate '" + leaf.getSubjectX500Principal().getName()
              + "' names none of the cluster's hosts " + new java.util.TreeSet<>(peerHosts)
              + " as a subject alternative name");
    }

    // Only who connects is checked further; whom this node connects to, as the authority says.

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
      super.checkClientTrusted(chain, authType, socket);
      checkIsNode(chain);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
      super.checkClientTrusted(chain, authType, engine);
      checkIsNode(chain);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
      super.checkClientTrusted(chain, authType);
      checkIsNode(chain);
    }
  }
}
