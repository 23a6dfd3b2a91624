package io.leasehold.zookeeper;

import io.leasehold.spi.SecretFiles;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;
import org.apache.curator.framework.AuthInfo;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.common.ClientX509Util;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.util.PemReader;

/**
 * What a {@code zookeeper://} URI's security parameters mean for the connection: TLS settings on a
 * {@link ZKClientConfig} of this backend's own (never JVM system properties, so other ZooKeeper
 * clients in the process are not changed), digest credentials, and the ACL of every znode the
 * backend creates. Every file is read, and checked, when the backend is opened, before any
 * connection is made; a bad one is refused with an {@link IllegalArgumentException} naming the
 * parameter (never the password).
 */
final class ZooKeeperSecurity implements AutoCloseable {

  private final ZKClientConfig clientConfig;
  private final List<AuthInfo> auth;
  private final List<ACL> acl;
  /** The certificate and key in one file, as ZooKeeper's PEM key store wants them; or null. */
  private final Path keyStoreFile;

  private ZooKeeperSecurity(
      ZKClientConfig clientConfig, List<AuthInfo> auth, List<ACL> acl, Path keyStoreFile) {
    this.clientConfig = clientConfig;
    this.auth = auth;
    this.acl = acl;
    this.keyStoreFile = keyStoreFile;
  }

  /**
   * Reads and checks the files {@code uri} names.
   *
   * @throws IllegalArgumentException naming the parameter whose file is missing, unreadable or
   *     not what it should be
   */
  static ZooKeeperSecurity load(ZooKeeperUri uri) {
    List<AuthInfo> auth = List.of();
    // Without credentials the znodes stay open to everyone, as before digest auth existed.
    List<ACL> acl = ZooDefs.Ids.OPEN_ACL_UNSAFE;
    if (uri.digest()) {
      byte[] password = password(uri.passwordFile());
      // ZooKeeper's digest credentials are "user:password" (the user cannot contain ':').
      byte[] user = uri.user().getBytes(StandardCharsets.UTF_8);
      byte[] credentials = concat(user, (byte) ':', password);
      java.util.Arrays.fill(password, (byte) 0);
      auth = List.of(new AuthInfo("digest", credentials));
      // "auth" ACL: every identity this session authenticated with, as the server computes it
      // (its own digest algorithm), with all rights; nobody else gets any.
      acl = ZooDefs.Ids.CREATOR_ALL_ACL;
    }
    if (!uri.tls()) {
      // Plaintext: ZooKeeper's default client configuration, exactly as before TLS existed.
      return new ZooKeeperSecurity(null, auth, acl, null);
    }
    checkCertificates("ca", uri.ca());
    Path keyStore = null;
    if (uri.cert() != null) {
      keyStore = keyStore(uri.cert(), uri.key());
    }
    ZKClientConfig config = new ZKClientConfig();
    try (ClientX509Util x509 = new ClientX509Util()) {
      config.setProperty(ZKClientConfig.SECURE_CLIENT, "true");
      config.setProperty(
          ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNetty");
      // Everything set explicitly: a ZKClientConfig starts from the JVM's zookeeper.ssl.*
      // system properties (an embedded server's, say), and this connection must use the URI's.
      config.setProperty(x509.getSslTruststoreLocationProperty(), uri.ca());
      config.setProperty(x509.getSslTruststoreTypeProperty(), "PEM");
      config.setProperty(x509.getSslTruststorePasswdProperty(), "");
      config.setProperty(
          x509.getSslKeystoreLocationProperty(), keyStore == null ? "" : keyStore.toString());
      config.setProperty(x509.getSslKeystoreTypeProperty(), "PEM");
      config.setProperty(x509.getSslKeystorePasswdProperty(), "");
      config.setProperty(x509.getSslHostnameVerificationEnabledProperty(), "true");
    }
    return new ZooKeeperSecurity(config, auth, acl, keyStore);
  }

  /** {@return this connection's own client configuration, or null for ZooKeeper's default} */
  ZKClientConfig clientConfig() {
    return clientConfig;
  }

  /** {@return the credentials Curator adds to every ZooKeeper handle it makes (empty: none)} */
  List<AuthInfo> auth() {
    return auth;
  }

  /** {@return the ACL of every znode the backend creates} */
  List<ACL> acl() {
    return acl;
  }

  /** Deletes the key store file this backend wrote. */
  @Override
  public void close() {
    if (keyStoreFile != null) {
      try {
        Files.deleteIfExists(keyStoreFile);
      } catch (IOException e) {
        // Left behind in the temporary directory, readable by this user only.
      }
    }
  }

  private static byte[] password(String file) {
    ownerOnly(file, "password-file '" + file + "'");
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(Path.of(file));
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "password-file '" + file + "' cannot be read: " + e.getClass().getSimpleName(), e);
    }
    // One line: a trailing line break (as editors and `echo` write) is not part of it.
    int end = bytes.length;
    if (end > 0 && bytes[end - 1] == '\n') {
      end--;
      if (end > 0 && bytes[end - 1] == '\r') {
        end--;
      }
    }
    for (int i = 0; i < end; i++) {
      if (bytes[i] == '\n' || bytes[i] == '\r') {
        java.util.Arrays.fill(bytes, (byte) 0);
        throw new IllegalArgumentException(
            "password-file '" + file + "' must hold the password on one line");
      }
    }
    if (end == 0) {
      throw new IllegalArgumentException("password-file '" + file + "' is empty");
    }
    byte[] password = java.util.Arrays.copyOf(bytes, end);
    java.util.Arrays.fill(bytes, (byte) 0);
    return password;
  }

  /** Refuses a file others may read ({@link SecretFiles}); a name that is no path is left to the read. */
  private static void ownerOnly(String file, String named) {
    Path path;
    try {
      path = Path.of(file);
    } catch (InvalidPathException e) {
      return;
    }
    SecretFiles.requireOwnerOnly(path, named);
  }

  private static List<X509Certificate> checkCertificates(String parameter, String file) {
    List<X509Certificate> chain;
    try {
      chain = PemReader.readCertificateChain(new File(file));
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      throw new IllegalArgumentException(
          parameter + " file '" + file + "' cannot be read as PEM certificates: " + e.getMessage(), e);
    }
    if (chain.isEmpty()) {
      throw new IllegalArgumentException(
          parameter + " file '" + file + "' holds no PEM certificate (BEGIN CERTIFICATE)");
    }
    return chain;
  }

  /**
   * ZooKeeper's PEM key store is one file holding the key and the chain; the URI names two, as
   * the core's {@code leaseholds://} does. The two are written together to a file of the
   * temporary directory readable by this user only, deleted when the backend closes.
   */
  private static Path keyStore(String certFile, String keyFile) {
    List<X509Certificate> chain = checkCertificates("cert", certFile);
    ownerOnly(keyFile, "key file '" + keyFile + "'");
    PrivateKey key;
    try {
      key = PemReader.loadPrivateKey(new File(keyFile), Optional.empty());
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      // Not the exception's message: it could quote the file's content.
      throw new IllegalArgumentException(
          "key file '" + keyFile + "' cannot be read as an unencrypted PEM private key (BEGIN"
              + " PRIVATE KEY): " + e.getClass().getSimpleName(), e);
    }
    if (!fits(key, chain.get(0))) {
      throw new IllegalArgumentException(
          "key file '" + keyFile + "' does not fit the first certificate of cert file '"
              + certFile + "'");
    }
    try {
      Path file = FileSystems.getDefault().supportedFileAttributeViews().contains("posix")
          ? Files.createTempFile("leasehold-zookeeper-", ".pem",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))
          : Files.createTempFile("leasehold-zookeeper-", ".pem");
      file.toFile().deleteOnExit();
      Files.write(file, concat(
          Files.readAllBytes(Path.of(keyFile)), (byte) '\n', Files.readAllBytes(Path.of(certFile))));
      return file;
    } catch (IOException e) {
      throw new IllegalStateException(
          "could not write the TLS key store for ZooKeeper to the temporary directory: " + e, e);
    }
  }

  private static byte[] concat(byte[] a, byte separator, byte[] b) {
    byte[] both = java.util.Arrays.copyOf(a, a.length + 1 + b.length);
    both[a.length] = separator;
    System.arraycopy(b, 0, both, a.length + 1, b.length);
    return both;
  }

  /** Whether {@code key} signs what the certificate's public key verifies. */
  private static boolean fits(PrivateKey key, X509Certificate certificate) {
    String algorithm = switch (key.getAlgorithm()) {
      case "EC" -> "SHA256withECDSA";
      case "RSA" -> "SHA256withRSA";
      case "Ed25519", "EdDSA" -> "Ed25519";
      default -> null;
    };
    if (algorithm == null) {
      return true; // cannot tell here; the TLS handshake will
    }
    try {
      byte[] probe = "leasehold key check".getBytes(StandardCharsets.US_ASCII);
      Signature sign = Signature.getInstance(algorithm);
      sign.initSign(key);
      sign.update(probe);
      byte[] signature = sign.sign();
      Signature verify = Signature.getInstance(algorithm);
      verify.initVerify(certificate.getPublicKey());
      verify.update(probe);
      return verify.verify(signature);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }
}
