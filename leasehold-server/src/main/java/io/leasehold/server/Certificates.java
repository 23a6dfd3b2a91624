package io.leasehold.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Makes a throwaway certificate authority and certificates it issues, in Java, as PEM files the
 * core reads: what {@code leasehold dev --tls} serves with, and what the TLS tests make (never
 * committed). For a real cluster make certificates with your own tools (docs/security.md).
 *
 * <p>Keys are EC P-256. Every certificate issued allows both TLS server and client use, so the
 * same one serves a node on its ports and as a client of the other nodes.
 */
public final class Certificates {

  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

  private Certificates() {}

  /**
   * A certificate and its private key.
   *
   * @param certificate the certificate
   * @param key its private key
   */
  public record Issued(X509Certificate certificate, PrivateKey key) {
    /** Checks the parts. */
    public Issued {
      Objects.requireNonNull(certificate, "certificate");
      Objects.requireNonNull(key, "key");
    }

    /**
     * Writes the certificate and the key as PEM (the key readable by its owner only, where the
     * file system says who may read).
     *
     * @param certFile where the certificate goes
     * @param keyFile where the key goes
     */
    public void writeTo(Path certFile, Path keyFile) {
      writeCertificates(certFile, certificate);
      writeKey(keyFile, key);
    }
  }

  /** A certificate authority: a self-signed certificate and the key that signs what it issues. */
  public static final class Authority {
    private final Issued self;
    private final X500Name name;

    private Authority(Issued self, X500Name name) {
      this.self = self;
      this.name = name;
    }

    /**
     * {@return a new authority named {@code name}, valid for {@code validity}}
     *
     * @param name its common name
     * @param validity how long it and what it issues are valid, 1 minute to 100 years
     */
    public static Authority create(String name, Duration validity) {
      checkValidity(validity);
      KeyPair pair = newKeyPair();
      X500Name subject = new X500Name("CN=" + name);
      try {
        JcaX509v3CertificateBuilder b = builder(subject, subject, pair, validity);
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(pair.getPublic()));
        return new Authority(new Issued(sign(b, pair.getPrivate()), pair.getPrivate()), subject);
      } catch (IOException | GeneralSecurityException e) {
        throw new IllegalStateException("could not make a CA certificate: " + e.getMessage(), e);
      }
    }

    /** {@return the authority's own certificate: what a peer puts in its trusted CA file} */
    public X509Certificate certificate() {
      return self.certificate();
    }

    /**
     * Issues a certificate for TLS servers and clients.
     *
     * @param commonName the subject's common name (a client's identity, a node's id)
     * @param hosts the host names and IP addresses it is valid for (subject alternative names);
     *     empty for a client's certificate
     * @param validity how long it is valid, 1 minute to 100 years
     * @return the certificate and its key
     */
    public Issued issue(String commonName, List<String> hosts, Duration validity) {
      checkValidity(validity);
      KeyPair pair = newKeyPair();
      try {
        JcaX509v3CertificateBuilder b =
            builder(name, new X500Name("CN=" + commonName), pair, validity);
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        b.addExtension(
            Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
        // A node's certificate (it names hosts) serves and connects; a client's only connects, so
        // the Raft port refuses it (NodeTls.PeersOnly).
        b.addExtension(
            Extension.extendedKeyUsage,
            false,
            new ExtendedKeyUsage(hosts.isEmpty()
                ? new KeyPurposeId[] {KeyPurposeId.id_kp_clientAuth}
                : new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}));
        b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(self.certificate()));
        if (!hosts.isEmpty()) {
          List<GeneralName> names = new ArrayList<>();
          for (String h : hosts) {
            names.add(new GeneralName(isAddress(h) ? GeneralName.iPAddress : GeneralName.dNSName, h));
          }
          b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(GeneralName[]::new)));
        }
        return new Issued(sign(b, self.key()), pair.getPrivate());
      } catch (IOException | GeneralSecurityException e) {
        throw new IllegalStateException("could not issue a certificate for " + commonName + ": " + e.getMessage(), e);
      }
    }
  }

  /**
   * The files {@code leasehold dev --tls} makes: one authority, one certificate the nodes share
   * (valid for the given hosts), one client certificate.
   *
   * @param ca the authority's certificate
   * @param nodeCert the nodes' certificate
   * @param nodeKey the nodes' key
   * @param clientCert a client's certificate
   * @param clientKey the client's key
   */
  public record DevFiles(Path ca, Path nodeCert, Path nodeKey, Path clientCert, Path clientKey) {}

  /**
   * Makes a new authority and a node and a client certificate in {@code dir}, as {@code ca.pem},
   * {@code node.pem}, {@code node-key.pem}, {@code client.pem} and {@code client-key.pem}
   * (replacing any there), valid for 30 days.
   *
   * @param dir the directory, created if missing
   * @param hosts the hosts the nodes' certificate names
   * @return the files
   */
  public static DevFiles makeDevFiles(Path dir, List<String> hosts) {
    Duration validity = Duration.ofDays(30);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("could not create " + dir + ": " + e.getMessage(), e);
    }
    Authority ca = Authority.create("leasehold dev CA", validity);
    DevFiles files =
        new DevFiles(
            dir.resolve("ca.pem"), dir.resolve("node.pem"), dir.resolve("node-key.pem"),
            dir.resolve("client.pem"), dir.resolve("client-key.pem"));
    writeCertificates(files.ca(), ca.certificate());
    ca.issue("leasehold-node", hosts, validity).writeTo(files.nodeCert(), files.nodeKey());
    ca.issue("leasehold-dev-client", List.of(), validity).writeTo(files.clientCert(), files.clientKey());
    return files;
  }

  /**
   * Writes certificates as one PEM file, replacing it in one step (a node reloading its files
   * never sees half of one).
   *
   * @param file the file
   * @param certificates the certificates, in order
   */
  public static void writeCertificates(Path file, X509Certificate... certificates) {
    StringBuilder pem = new StringBuilder();
    try {
      for (X509Certificate c : certificates) {
        pem.append(pem("CERTIFICATE", c.getEncoded()));
      }
    } catch (java.security.cert.CertificateEncodingException e) {
      throw new IllegalStateException(e);
    }
    replace(file, pem.toString(), false);
  }

  /**
   * Writes a private key as PEM (PKCS#8), readable by its owner only where the file system says
   * who may read, replacing the file in one step.
   *
   * @param file the file
   * @param key the key
   */
  public static void writeKey(Path file, PrivateKey key) {
    replace(file, pem("PRIVATE KEY", key.getEncoded()), true);
  }

  private static String pem(String type, byte[] der) {
    String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
    return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
  }

  private static void replace(Path file, String content, boolean secret) {
    Path absolute = file.toAbsolutePath();
    try {
      Files.createDirectories(absolute.getParent());
      Path tmp = Files.createTempFile(absolute.getParent(), absolute.getFileName().toString(), ".tmp");
      try {
        if (secret && FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
          Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        }
        Files.writeString(tmp, content, StandardCharsets.US_ASCII);
        Files.move(tmp, absolute, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + file + ": " + e.getMessage(), e);
    }
  }

  private static void checkValidity(Duration validity) {
    if (validity.compareTo(Duration.ofMinutes(1)) < 0 || validity.compareTo(Duration.ofDays(36_500)) > 0) {
      throw new IllegalArgumentException("certificate validity must be between 1 minute and 100 years; was " + validity);
    }
  }

  private static boolean isAddress(String host) {
    return IPV4.matcher(host).matches() || host.contains(":");
  }

  private static KeyPair newKeyPair() {
    try {
      KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
      g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
      return g.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("EC P-256 keys are not available in this JVM", e);
    }
  }

  private static JcaX509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair pair, Duration validity) {
    Instant now = Instant.now();
    // An hour back: a peer whose clock is a little behind accepts it at once.
    return new JcaX509v3CertificateBuilder(
        issuer,
        new BigInteger(127, RANDOM).add(BigInteger.ONE),
        Date.from(now.minus(Duration.ofHours(1))),
        Date.from(now.plus(validity)),
        subject,
        pair.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key) throws GeneralSecurityException {
    try {
      return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key)));
    } catch (OperatorCreationException e) {
      throw new GeneralSecurityException(e);
    }
  }
}
