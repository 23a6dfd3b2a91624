package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.server.Certificates;
import io.leasehold.testkit.FileModes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A client key others may read is refused, naming it, its mode and the fix; nothing is opened. */
class ClientTlsKeyFileTest {

  @TempDir static Path dir;
  static Path ca;
  static Path cert;
  static Path key;

  @BeforeAll
  static void makeFiles() {
    Certificates.Authority authority = Certificates.Authority.create("key file test CA", Duration.ofDays(1));
    ca = dir.resolve("ca.pem");
    cert = dir.resolve("client.pem");
    key = dir.resolve("client-key.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    authority.issue("client", List.of(), Duration.ofDays(1)).writeTo(cert, key);
  }

  @Test
  void aKeyOthersMayReadIsRefused() throws Exception {
    Path shared = FileModes.readableByAll(Files.copy(key, dir.resolve("shared-key.pem")));
    assertThatThrownBy(() -> ClientTls.load(ca, cert, shared))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("key=" + shared + ": mode 0644 (rw-r--r--) lets others at it, and a private key"
            + " or password file must be its owner's only: chmod 600 " + shared);
    assertThatThrownBy(
            () -> CoreBackendProvider.target("leaseholds://127.0.0.1:7000?ca=" + ca + "&cert=" + cert + "&key=" + shared))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chmod 600 " + shared);
  }

  @Test
  void theHelpersKeyIsItsOwnersOnlyAndAccepted() throws Exception {
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key))).isEqualTo("rw-------");
    assertThat(ClientTls.load(ca, cert, key).key()).hasValue(key);
  }
}
