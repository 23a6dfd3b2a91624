package io.leasehold.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The modes tests give key and password files: every backend refuses one that others may read
 * ({@code io.leasehold.spi.SecretFiles}), so a fixture makes its files its owner's only, and a
 * test of that refusal makes one readable by all.
 */
public final class FileModes {

  private FileModes() {}

  /**
   * Makes {@code file} its owner's only (0600).
   *
   * @param file an existing file
   * @return the file
   */
  public static Path ownerOnly(Path file) {
    return chmod(file, "rw-------");
  }

  /**
   * Makes {@code file} readable by everyone (0644), as a careless {@code umask} leaves it.
   *
   * @param file an existing file
   * @return the file
   */
  public static Path readableByAll(Path file) {
    return chmod(file, "rw-r--r--");
  }

  private static Path chmod(Path file, String mode) {
    try {
      return Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot chmod " + file, e);
    }
  }
}
