package io.leasehold.zookeeper;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.server.Certificates;
import io.leasehold.testkit.FileModes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A password file or client key others may read is refused, naming it, its mode and the fix. */
class ZooKeeperSecretFilesTest {

  @TempDir static Path dir;
  private static Path ca;
  private static Path cert;
  private static Path key;

  @BeforeAll
  static void makeFiles() {
    Certificates.Authority authority = Certificates.Authority.create("test CA", Duration.ofHours(1));
    ca = dir.resolve("ca.pem");
    Certificates.writeCertificates(ca, authority.certificate());
    cert = dir.resolve("client.pem");
    key = dir.resolve("client-key.pem");
    authority.issue("client", List.of(), Duration.ofHours(1)).writeTo(cert, key);
  }


  @Test
  void aPasswordFileOthersMayReadIsRefused() throws Exception {
    Path password = FileModes.readableByAll(Files.writeString(dir.resolve("password"), "hunter2\n"));
    ZooKeeperUri uri = ZooKeeperUri.parse("zookeeper://127.0.0.1:2181?user=u&password-file=" + password);
    assertThatThrownBy(() -> ZooKeeperSecurity.load(uri).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("password-file '" + password + "': mode 0644 (rw-r--r--) lets others at it, and a"
            + " private key or password file must be its owner's only: chmod 600 " + password);
  }

  @Test
  void aClientKeyOthersMayReadIsRefused() throws Exception {
    Path shared = FileModes.readableByAll(Files.copy(key, dir.resolve("shared-key.pem")));
    ZooKeeperUri uri =
        ZooKeeperUri.parse("zookeeper://127.0.0.1:2181?ca=" + ca + "&cert=" + cert + "&key=" + shared);
    assertThatThrownBy(() -> ZooKeeperSecurity.load(uri).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("key file '" + shared + "': mode 0644 (rw-r--r--)")
        .hasMessageEndingWith("chmod 600 " + shared);
  }
}
