package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Key and password files must be their owner's only (or, owned by root, their group's too). */
class SecretFilesTest {

  @TempDir static Path dir;

  /** Every machine this project builds on has POSIX permissions: the checks below run, never skip. */
  @BeforeAll
  static void posix() {
    assertThat(FileSystems.getDefault().supportedFileAttributeViews()).as("this file system's views").contains("posix");
  }

  /**
   * Where a file system has no POSIX permissions there is nothing to check: a zip file system (no
   * POSIX view unless asked for) stands for one, so that branch runs here too.
   */
  @Test
  void aFileOnAFileSystemWithoutPosixPermissionsIsNotRefused() throws Exception {
    Path zip = dir.resolve("secrets.zip");
    try (FileSystem zipped = FileSystems.newFileSystem(zip, Map.of("create", "true"))) {
      Path f = Files.writeString(zipped.getPath("/password"), "s3cret\n");
      assertThat(Files.getFileAttributeView(f, PosixFileAttributeView.class)).as("no POSIX view").isNull();
      assertThatCode(() -> SecretFiles.requireOwnerOnly(f, "password-file=" + f)).doesNotThrowAnyException();
    }
  }

  private static Path file(String mode) throws Exception {
    Path f = Files.writeString(dir.resolve("secret-" + mode), "s3cret\n");
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
    return f;
  }

  @ParameterizedTest
  @ValueSource(strings = {"rw-------", "r--------", "---------"})
  void anOwnerOnlyFileIsAccepted(String mode) throws Exception {
    Path f = file(mode);
    assertThatCode(() -> SecretFiles.requireOwnerOnly(f, "key=" + f)).doesNotThrowAnyException();
  }

  @ParameterizedTest
  @ValueSource(strings = {"rw-r--r--", "rw-rw----", "rw----r--", "rw-----w-", "rw-rw-rw-"})
  void aFileTheGroupCanWriteOrOthersCanReadIsRefused(String mode) throws Exception {
    Path f = file(mode);
    assertThatThrownBy(() -> SecretFiles.requireOwnerOnly(f, "password-file=" + f))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("password-file=" + f + ": mode 0")
        .hasMessageContaining("(" + mode + ")")
        .hasMessageEndingWith("must be its owner's only: chmod 600 " + f)
        .hasMessageNotContaining("s3cret");
  }

  @Test
  void theMessageGivesTheOctalMode() throws Exception {
    Path f = file("rw-r--r--");
    assertThatThrownBy(() -> SecretFiles.requireOwnerOnly(f, "key=" + f))
        .hasMessage("key=" + f + ": mode 0644 (rw-r--r--) lets others at it, and a private key or"
            + " password file must be its owner's only: chmod 600 " + f);
  }

  @Test
  void aGroupMayReadOnlyAFileRootOwns() {
    Path f = Path.of("/run/secrets/tls/key.pem");
    assertThat(SecretFiles.problem(PosixFilePermissions.fromString("rw-r-----"), false, f))
        .isEqualTo("mode 0640 (rw-r-----) lets its group at it, and a private key or password file"
            + " must be its owner's only: chmod 600 " + f);
    assertThat(SecretFiles.problem(PosixFilePermissions.fromString("rw-r-----"), true, f)).isNull();
    assertThat(SecretFiles.problem(PosixFilePermissions.fromString("r--r-----"), true, f)).isNull();
    assertThat(SecretFiles.problem(PosixFilePermissions.fromString("rw-rw----"), true, f)).isNotNull();
    assertThat(SecretFiles.problem(PosixFilePermissions.fromString("rw-r--r--"), true, f)).isNotNull();
  }

  @Test
  void aMissingFileIsLeftToTheRead() {
    Path missing = dir.resolve("missing");
    assertThatCode(() -> SecretFiles.requireOwnerOnly(missing, "key=" + missing)).doesNotThrowAnyException();
  }
}
