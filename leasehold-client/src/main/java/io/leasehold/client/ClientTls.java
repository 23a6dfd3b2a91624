package io.leasehold.client;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.leasehold.spi.SecretFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Objects;

/**
 * How a client reaches a core that serves TLS: the authorities it trusts to have signed the
 * nodes' certificates, and the client's own certificate and key when the core asks for one
 * (mutual TLS). The files are read once, when the client is made; the nodes' host names are
 * checked against their certificates.
 *
 * <p>Made by {@link CoreBackendProvider#target} from a {@code leaseholds://} URI's {@code ca},
 * {@code cert} and {@code key} parameters, or by {@link #load}.
 */
public final class ClientTls {

  private final Path ca;
  private final Path cert;
  private final Path key;
  private final SslContext context;

  private ClientTls(Path ca, Path cert, Path key, SslContext context) {
    this.ca = ca;
    this.cert = cert;
    this.key = key;
    this.context = context;
  }

  /**
   * Reads and checks the files.
   *
   * @param ca the trusted authorities' certificates, PEM
   * @param cert the client's certificate chain, PEM; null when the client shows none
   * @param key the client's private key, PEM (PKCS#8); null exactly when {@code cert} is
   * @return the client's TLS settings
   * @throws IllegalArgumentException naming the parameter ({@code ca}, {@code cert}, {@code key})
   *     whose file is missing, unreadable or not what it should be, or a key the group or others
   *     may read ({@link SecretFiles#requireOwnerOnly})
   */
  public static ClientTls load(Path ca, Path cert, Path key) {
    Objects.requireNonNull(ca, "ca");
    if ((cert == null) != (key == null)) {
      throw new IllegalArgumentException(
          cert == null
              ? "key= needs cert=: a client key without its certificate is of no use"
              : "cert= needs key=: a client certificate needs its private key");
    }
    readable("ca", ca);
    if (cert != null) {
      readable("cert", cert);
      readable("key", key);
      SecretFiles.requireOwnerOnly(key, "key=" + key);
    }
    checkCertificates("ca", ca);
    if (cert != null) {
      checkCertificates("cert", cert);
    }
    SslContextBuilder b = GrpcSslContexts.forClient();
    try {
      b.trustManager(ca.toFile());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("ca=" + ca + " cannot be used as trusted certificates: " + e.getMessage(), e);
    }
    if (cert != null) {
      try {
        b.keyManager(cert.toFile(), key.toFile());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "key=" + key + " (with cert=" + cert + ") is not a usable PEM PKCS#8 private key: " + rootMessage(e), e);
      }
    }
    try {
      return new ClientTls(ca, cert, key, b.build());
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "the TLS files (ca=" + ca + (cert == null ? "" : ", cert=" + cert + ", key=" + key) + ") cannot be used: " + rootMessage(e), e);
    }
  }

  private static void readable(String parameter, Path file) {
    if (!Files.exists(file)) {
      throw new IllegalArgumentException(parameter + "=" + file + ": the file does not exist");
    }
    if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
      throw new IllegalArgumentException(parameter + "=" + file + ": not a readable file");
    }
  }

  private static void checkCertificates(String parameter, Path file) {
    try (InputStream in = Files.newInputStream(file)) {
      if (CertificateFactory.getInstance("X.509").generateCertificates(in).isEmpty()) {
        throw new IllegalArgumentException(parameter + "=" + file + ": holds no PEM certificate");
      }
    } catch (IOException | CertificateException e) {
      throw new IllegalArgumentException(parameter + "=" + file + ": not a PEM certificate file (" + rootMessage(e) + ")", e);
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.toString() : t.getMessage();
  }

  /** {@return the trusted authorities' file} */
  public Path ca() {
    return ca;
  }

  /** {@return the client's certificate file; empty when it shows none} */
  public java.util.Optional<Path> cert() {
    return java.util.Optional.ofNullable(cert);
  }

  /** {@return the client's key file; empty when it shows no certificate} */
  public java.util.Optional<Path> key() {
    return java.util.Optional.ofNullable(key);
  }

  /** The SSL context every channel of a client shares. */
  SslContext context() {
    return context;
  }

  @Override
  public String toString() {
    return "ClientTls[ca=" + ca + (cert == null ? "" : ", cert=" + cert + ", key=" + key) + "]";
  }
}
