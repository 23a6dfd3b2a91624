package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A node's TLS key that others may read refuses the start, naming the file, its mode and the fix. */
class NodeTlsKeyFileTest {

  @TempDir Path dir;

  @Test
  void aKeyOthersMayReadRefusesTheStart() throws Exception {
    Certificates.Authority authority = Certificates.Authority.create("node key test CA", Duration.ofHours(1));
    Path ca = dir.resolve("ca.pem");
    Path cert = dir.resolve("node.pem");
    Path key = dir.resolve("node-key.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    authority.issue("node", List.of("127.0.0.1"), Duration.ofHours(1)).writeTo(cert, key);
    Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> NodeTls.load(TlsConfig.of(cert, key, ca), "n1").close())
        .isInstanceOf(StartRefusedException.class)
        .hasMessage("node n1 refuses to start: its TLS private key (--tls-key) file " + key + ": mode 0644"
            + " (rw-r--r--) lets others at it, and a private key or password file must be its owner's"
            + " only: chmod 600 " + key);
  }
}
