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
    String refusal = denied(e);
    if (refusal != null) {
      return "permission denied: " + refusal;
    }
    String tls = tlsProblem(e);
    if (tls != null) {
      // "no node of [h:p] answered: UNAVAILABLE: ssl exception (TLS handshake failed: <OpenSSL's
      // error>)": what was tried, then the reason in words.
      String m = String.valueOf(e.getMessage());
      int cut = firstOf(m, ": UNAVAILABLE", " (TLS handshake failed", ": io.grpc", ": javax.net");
      return (cut > 0 ? m.substring(0, cut) : "TLS handshake failed") + " (" + tls + ")";
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

  private static int firstOf(String m, String... marks) {
    int first = -1;
    for (String mark : marks) {
      int i = m.indexOf(mark);
      if (i > 0 && (first < 0 || i < first)) {
        first = i;
      }
    }
    return first;
  }

  /**
   * {@return the store's reason when it refused a call for want of a right ({@code
   * PERMISSION_DENIED}: the identity, the right, the lease or prefix, as the server says them);
   * null for any other failure} A refusal is definite: not a store that did not answer.
   */
  static String denied(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      io.grpc.Status s = io.grpc.Status.fromThrowable(c);
      if (s.getCode() == io.grpc.Status.Code.PERMISSION_DENIED
          && (c instanceof io.grpc.StatusRuntimeException || c instanceof io.grpc.StatusException)) {
        return String.valueOf(s.getDescription());
      }
      String m = c.getMessage();
      int at = m == null ? -1 : m.indexOf("PERMISSION_DENIED: ");
      if (at >= 0) {
        return m.substring(at + "PERMISSION_DENIED: ".length());
      }
    }
    return null;
  }

  /**
   * {@return why a TLS handshake failed, in words, or null if none did}: OpenSSL's alert names
   * ({@code TLSV1_ALERT_CERTIFICATE_REQUIRED}) and the JDK's PKIX messages said as what to do.
   */
  static String tlsProblem(Throwable t) {
    StringBuilder all = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      all.append(c.getMessage()).append('\n');
    }
    String m = all.toString();
    if (m.contains("CERTIFICATE_REQUIRED") || m.contains("certificate_required")) {
      return "the node asks for a client certificate and the URI names none (add cert=FILE&key=FILE)";
    }
    if (m.contains("ALERT_UNKNOWN_CA") || m.contains("ALERT_BAD_CERTIFICATE") || m.contains("ALERT_CERTIFICATE_UNKNOWN")) {
      return "the node does not accept the client certificate (cert=): it is not issued by an authority in the"
          + " node's --tls-ca";
    }
    if (m.contains("PKIX path") || m.contains("unable to find valid certification path")) {
      return "the node's certificate is not issued by the authority in ca=";
    }
    if (m.contains("No subject alternative") || m.contains("doesn't match any of the subject alternative")) {
      return "the node's certificate does not name the host in the URI";
    }
    return null; // another reason, or none: the message as it is says more than a guess

  }

  /** A message's tail that is a Java exception's {@code toString()}: ": java.net.FooException…". */
  private static final java.util.regex.Pattern WRAPPED =
      java.util.regex.Pattern.compile(":\\s+(?:[a-z][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error)\\b.*$");

  /** {@return whether {@code t} failed because the network did not carry it: no answer at all} */
  static boolean isNetwork(Throwable t) {
    Throwable e = unwrap(t);
    return network(e) != null || networkBelow(e) != null;
  }

  /** {@return the network failure of {@code t} or its causes in a few words, or null if none} */
  static String networkReason(Throwable t) {
    Throwable e = unwrap(t);
    String own = network(e);
    return own != null ? own : networkBelow(e);
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
    if (m.contains("reset by peer") || m.contains("Connection reset")) {
      // Netty's native transport: "recvAddress(..) failed with error(-104): Connection reset by peer"
      return "connection reset";
    }
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
