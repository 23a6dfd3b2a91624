package io.leasehold.postgresql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.leasehold.LeaseBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A password file others may read is refused, as libpq refuses such a {@code ~/.pgpass}: naming
 * it, its mode and the fix; nothing is opened. No PostgreSQL is needed.
 */
class PostgresSecretFilesTest {

  @TempDir Path dir;

  @Test
  void aPasswordFileOthersMayReadIsRefused() throws Exception {
    Path password = Files.writeString(dir.resolve("pw"), "hunter2\n");
    Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> PostgresBackend.readPassword(password))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("PostgreSQL backend: password-file '" + password + "': mode 0644 (rw-r--r--) lets"
            + " others at it, and a private key or password file must be its owner's only: chmod 600 "
            + password);
    assertThatThrownBy(() -> LeaseBackend.open("postgresql://127.0.0.1:1/db?password-file=" + password).close())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chmod 600 " + password);
  }

  @Test
  void anOwnerOnlyPasswordFileIsRead() throws Exception {
    Path password = Files.writeString(dir.resolve("pw"), "s3cret\n");
    Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-------"));
    assertThat(PostgresBackend.readPassword(password)).containsExactly('s', '3', 'c', 'r', 'e', 't');
  }
}
