package io.leasehold;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Finds the {@link LeaseBackendProvider} for a URI's scheme; package-private. */
final class BackendRegistry {

  /** The schemes Leasehold's own modules serve, for the error message. */
  static final List<String> KNOWN_SCHEMES =
      List.of(
          "memory", "leasehold", "leaseholds", "etcd", "etcds", "zookeeper", "kubernetes",
          "postgresql");

  /** The Maven coordinates of the module that serves a scheme, for the error message. */
  static String moduleHint(String scheme) {
    String module =
        "leasehold".equals(scheme) || "leaseholds".equals(scheme) ? "leasehold-client"
            : "etcds".equals(scheme) ? "leasehold-etcd" : "leasehold-" + scheme;
    return "io.leasehold:" + module;
  }

  /**
   * {@return what to do about a scheme no provider serves}: the module of a known scheme; for any
   * other (a typo: {@code leasehol}), the nearest known or available scheme, not a module that
   * does not exist
   */
  static String unservedHint(String scheme, TreeSet<String> available) {
    if (KNOWN_SCHEMES.contains(scheme)) {
      return "add the backend's module, " + moduleHint(scheme);
    }
    TreeSet<String> candidates = new TreeSet<>(available);
    candidates.addAll(KNOWN_SCHEMES);
    String nearest = null;
    int best = Integer.MAX_VALUE;
    for (String c : candidates) {
      int d = distance(scheme, c);
      if (d < best) {
        best = d;
        nearest = c;
      }
    }
    return nearest != null && best <= Math.max(1, scheme.length() / 3)
        ? "did you mean '" + nearest + ":'?"
        : "no Leasehold module serves it";
  }

  /** {@return the Levenshtein distance of two strings} */
  static int distance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] row = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      row[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        row[j] = Math.min(substitute, Math.min(previous[j], row[j - 1]) + 1);
      }
      int[] t = previous;
      previous = row;
      row = t;
    }
    return previous[b.length()];
  }

  private static final Pattern SCHEME = Pattern.compile("^([A-Za-z][A-Za-z0-9+.-]*):");

  private BackendRegistry() {}

  static LeaseBackend open(String uri) {
    Objects.requireNonNull(uri, "uri");
    Matcher m = SCHEME.matcher(uri);
    if (!m.find()) {
      throw new IllegalArgumentException(
          "backend URI must start with a scheme such as memory:, leasehold://, leaseholds://, etcd://,"
              + " zookeeper://, kubernetes: or postgresql://; was '" + BackendUris.redacted(uri) + "'");
    }
    String scheme = m.group(1).toLowerCase(Locale.ROOT);
    List<LeaseBackendProvider> matching = new ArrayList<>();
    TreeSet<String> available = new TreeSet<>();
    for (LeaseBackendProvider p : providers()) {
      available.add(p.scheme());
      if (p.scheme().equals(scheme)) {
        matching.add(p);
      }
    }
    if (matching.isEmpty()) {
      throw new IllegalArgumentException(
          "no Leasehold backend for scheme '" + scheme + "' is on the class path or module path"
              + " (available: " + (available.isEmpty() ? "none" : String.join(", ", available))
              + "); " + unservedHint(scheme, available));
    }
    if (matching.size() > 1) {
      List<String> classes = new ArrayList<>();
      matching.forEach(p -> classes.add(p.getClass().getName()));
      throw new IllegalStateException(
          "more than one Leasehold backend serves scheme '" + scheme + "': " + classes
              + "; keep one of them on the class path");
    }
    return matching.get(0).open(uri);
  }

  /**
   * Providers visible to the thread's context class loader (application servers, plug-ins) and
   * to this module's loader, each class once.
   */
  private static List<LeaseBackendProvider> providers() {
    List<LeaseBackendProvider> found = new ArrayList<>();
    TreeSet<String> seen = new TreeSet<>();
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    ClassLoader own = BackendRegistry.class.getClassLoader();
    for (ClassLoader loader : context != null ? new ClassLoader[] {context, own} : new ClassLoader[] {own}) {
      for (LeaseBackendProvider p : ServiceLoader.load(LeaseBackendProvider.class, loader)) {
        if (seen.add(p.getClass().getName())) {
          found.add(p);
        }
      }
    }
    return found;
  }
}
