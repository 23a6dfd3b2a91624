package io.leasehold.cli;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Exceptions as one line a user can act on: no wrapper class names, no message said twice. */
final class Errors {

  private Errors() {}

  /** {@return {@code t} without the wrappers that only say it was thrown on another thread} */
  static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * {@return what went wrong, for a user}: a file system error names the file and the reason (Java's
   * own message is sometimes only the path); a network error's root cause said briefly, as
   * {@code status} says it ("connection refused"), not as gRPC's "UNAVAILABLE: io exception"; each
   * thing once.
   */
  static String describe(Throwable t) {
    Throwable e = unwrap(t);
    if (e instanceof FileSystemException f) {
      return f.getFile() != null ? f.getFile() + ": " + reason(f) : reason(f);
    }
    Throwable c = e.getCause();
    String m = e.getMessage();
    if (c != null && c != e && (m == null || m.isBlank() || m.equals(c.toString()))) {
      return describe(c); // new X(cause): the cause says it all
    }
    if (m == null || m.isBlank()) {
      return e.getClass().getSimpleName();
    }
    if (c instanceof FileSystemException f) {
      // "node n1 could not start: /proc/x" caused by "/proc/x": the reason after the path.
      return f.getFile() != null && m.endsWith(f.getFile()) ? m + ": " + reason(f) : m + ": " + describe(f);
    }
    String network = networkBelow(e);
    if (network != null) {
      // What a backend wrote from its causes ("…: UNAVAILABLE: io exception", "…:
      // java.util.concurrent.CompletionException: java.net.ConnectException") says the same as
      // the few words in brackets, less readably.
      return WRAPPED.matcher(m.replace(": UNAVAILABLE: io exception", "")).replaceFirst("")
          + " (" + network + ")";
    }
    return m;
  }

  /** A message's tail that is a Java exception's {@code toString()}: ": java.net.FooException…". */
  private static final java.util.regex.Pattern WRAPPED =
      java.util.regex.Pattern.compile(":\\s+(?:[a-z][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error)\\b.*$");

  /** {@return whether {@code t} failed because the network did not carry it: no answer at all} */
  static boolean isNetwork(Throwable t) {
    Throwable e = unwrap(t);
    return network(e) != null || networkBelow(e) != null;
  }

  /** {@return the deepest network failure among {@code e}'s causes (not {@code e}), in a few words} */
  private static String networkBelow(Throwable e) {
    String found = null;
    for (Throwable c = e.getCause(); c != null; c = c.getCause() == c ? null : c.getCause()) {
      String n = network(c);
      found = n != null ? n : found;
    }
    return found;
  }

  /** {@return a network failure in a few words, or null if {@code root} is not one} */
  private static String network(Throwable root) {
    String m = String.valueOf(root.getMessage());
    if (root instanceof java.net.ConnectException || m.contains("Connection refused")) {
      return m.contains("refused") ? "connection refused"
          : root.getMessage() == null ? "cannot connect" : "cannot connect: " + m;
    }
    if (root.getClass().getSimpleName().equals("ConnectionLossException")) {
      return "connection lost"; // ZooKeeper's: no server of the ensemble answered in time
    }
    if (root instanceof java.net.UnknownHostException) {
      return "unknown host " + m;
    }
    if (root instanceof java.nio.channels.UnresolvedAddressException) {
      return "unknown host"; // Netty's and Vert.x's: no name, the message above has it
    }
    if (root instanceof java.net.SocketTimeoutException) {
      return "no answer in time";
    }
    if (root instanceof java.net.NoRouteToHostException) {
      return "no route to host";
    }
    return null;
  }

  private static String reason(FileSystemException f) {
    return f.getReason() != null
            ? f.getReason()
            : f instanceof AccessDeniedException
                ? "permission denied"
                : f instanceof NoSuchFileException
                    ? "no such file or directory"
                    : f instanceof NotDirectoryException
                        ? "not a directory"
                        : f instanceof FileAlreadyExistsException
                            ? "it exists already (a file where a directory is needed?)"
                            : f instanceof DirectoryNotEmptyException
                                ? "the directory is not empty"
                                : f.getClass().getSimpleName();
  }
}
