package io.leasehold.spi;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The check every backend, the core's client and its server make before they read a private key
 * or a password file: on a POSIX file system the file must be its owner's only, as ssh asks of a
 * private key and libpq of {@code ~/.pgpass}. A file that the group or others may read or write
 * is refused with one line naming it, its mode and the fix ({@code chmod 600 FILE}).
 *
 * <p>One exception, PostgreSQL's for its server key: a file owned by root may be readable by its
 * group (mode 0640 or 0440, nothing for others). That is how Kubernetes mounts a secret for a pod
 * that runs as another user with an {@code fsGroup} (the secret's {@code defaultMode} 0400 becomes
 * 0440, owned by root and the pod's group), and how {@code ssl-cert} groups share keys on Debian.
 */
public final class SecretFiles {

  private SecretFiles() {}

  /**
   * Refuses {@code file} if the group or others may read or write it. Where the file system has no
   * POSIX permissions (Windows), there is nothing to check and nothing is refused; a file that does
   * not exist or cannot be looked at is left to the caller's read, which says so in its words.
   *
   * @param file the private key or password file
   * @param named how the caller names the file in its messages, to start the refusal: {@code
   *     "etcd backend: password-file=/run/pw"}
   * @throws IllegalArgumentException {@code named + ": mode 0644 (rw-r--r--) lets ..."}
   */
  public static void requireOwnerOnly(Path file, String named) {
    PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class);
    if (view == null) {
      return; // not a POSIX file system: its access control is not modes (ACLs on Windows)
    }
    PosixFileAttributes attributes;
    try {
      attributes = view.readAttributes(); // of the file a symbolic link names, as the read
    } catch (IOException | SecurityException e) {
      return;
    }
    String problem =
        problem(attributes.permissions(), "root".equals(attributes.owner().getName()), file);
    if (problem != null) {
      throw new IllegalArgumentException(named + ": " + problem);
    }
  }

  /**
   * {@return why a file of these permissions is refused, naming {@code file} in the fix; null if it
   * is not}
   *
   * @param permissions the file's permissions
   * @param ownedByRoot whether root owns it (then its group may read it)
   * @param file the file, for the fix
   */
  static String problem(Set<PosixFilePermission> permissions, boolean ownedByRoot, Path file) {
    boolean others = permissions.contains(PosixFilePermission.OTHERS_READ)
        || permissions.contains(PosixFilePermission.OTHERS_WRITE)
        || permissions.contains(PosixFilePermission.OTHERS_EXECUTE);
    boolean groupRead = permissions.contains(PosixFilePermission.GROUP_READ);
    boolean groupMore = permissions.contains(PosixFilePermission.GROUP_WRITE)
        || permissions.contains(PosixFilePermission.GROUP_EXECUTE);
    if (!others && !groupMore && (!groupRead || ownedByRoot)) {
      return null;
    }
    return "mode " + octal(permissions) + " (" + PosixFilePermissions.toString(permissions)
        + ") lets " + (others ? "others" : "its group") + " at it, and a private key or password"
        + " file must be its owner's only: chmod 600 " + file;
  }

  private static String octal(Set<PosixFilePermission> permissions) {
    int mode = 0;
    for (PosixFilePermission p : permissions) {
      mode |= 1 << (8 - p.ordinal()); // OWNER_READ (0) is 0400, OTHERS_EXECUTE (8) is 0001
    }
    return String.format("%04o", mode);
  }
}
