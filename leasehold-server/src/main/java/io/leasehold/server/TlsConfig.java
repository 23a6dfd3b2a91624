package io.leasehold.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * TLS on every port of a node: the client port (clients and the other nodes' settings checks)
 * and the Raft port (replication, Ratis's client and admin calls). One certificate and key serve
 * the node both as a server and as a client of the other nodes, so the certificate must allow
 * both uses (no extended key usage, or both serverAuth and clientAuth) and name the node's host
 * from {@code --peers} (a DNS or IP subject alternative name): peers check it.
 *
 * <p>The files are read at start (a bad file refuses the start) and checked again every {@code
 * reloadEvery}: replaced files are used for new connections from then on, without a restart. A
 * replacement that cannot be used (half written, a key that does not fit the certificate) is
 * logged and skipped; the node keeps the last good certificates and tries again.
 *
 * @param cert the node's certificate chain, PEM (the node's certificate first)
 * @param key the node's private key, PEM (PKCS#8, RSA or EC)
 * @param ca the certificates of the authorities whose certificates this node trusts, PEM: client
 *     certificates and the other nodes' certificates must be issued by one of them
 * @param clientAuth whether clients must show a certificate on the client port; the Raft port
 *     always requires one (only nodes talk there)
 * @param reloadEvery how often the files are checked for a change, 10 ms to 1 h
 */
public record TlsConfig(Path cert, Path key, Path ca, ClientAuth clientAuth, Duration reloadEvery) {

  /** Whether a client on the client port must present a certificate. */
  public enum ClientAuth {
    /** A client without a certificate trusted by {@code ca} is refused in the handshake. */
    REQUIRE,
    /**
     * A client may connect without a certificate (the server is still authenticated and the
     * traffic encrypted); one that presents a certificate must present a trusted one.
     */
    OPTIONAL
  }

  /** How often a node checks its certificate files by default. */
  public static final Duration DEFAULT_RELOAD_EVERY = Duration.ofSeconds(30);

  /**
   * Checks the parts (not the files: {@link CoreNode#start} reads them).
   *
   * @param cert the certificate chain file
   * @param key the private key file
   * @param ca the trusted authorities' file
   * @param clientAuth whether clients need a certificate
   * @param reloadEvery how often the files are checked
   */
  public TlsConfig {
    Objects.requireNonNull(cert, "cert");
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(ca, "ca");
    Objects.requireNonNull(clientAuth, "clientAuth");
    Objects.requireNonNull(reloadEvery, "reloadEvery");
    if (reloadEvery.compareTo(Duration.ofMillis(10)) < 0 || reloadEvery.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException(
          "TLS reload interval must be between 10 ms and 1 h; was " + reloadEvery.toMillis() + " ms");
    }
  }

  /**
   * {@return mutual TLS from these files, checked for changes every {@link #DEFAULT_RELOAD_EVERY}}
   *
   * @param cert the node's certificate chain, PEM
   * @param key the node's private key, PEM
   * @param ca the trusted authorities, PEM
   */
  public static TlsConfig of(Path cert, Path key, Path ca) {
    return new TlsConfig(cert, key, ca, ClientAuth.REQUIRE, DEFAULT_RELOAD_EVERY);
  }

  /** {@return a copy with another client certificate policy} */
  public TlsConfig withClientAuth(ClientAuth auth) {
    return new TlsConfig(cert, key, ca, auth, reloadEvery);
  }

  /** {@return a copy that checks the files this often} */
  public TlsConfig withReloadEvery(Duration every) {
    return new TlsConfig(cert, key, ca, clientAuth, every);
  }
}
