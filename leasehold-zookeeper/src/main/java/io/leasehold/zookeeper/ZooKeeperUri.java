package io.leasehold.zookeeper;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A parsed {@code zookeeper://host:port[,host:port...][/chroot][?sessionTimeout=15s]} URI.
 *
 * @param servers the ensemble as ZooKeeper's connect string wants it: {@code host:port,...}
 * @param chroot the chroot path, starting with {@code /}, or empty for the ensemble's root
 * @param sessionTimeout the session timeout the backend asks the ensemble for
 */
record ZooKeeperUri(String servers, String chroot, Duration sessionTimeout) {

  static final String SCHEME = "zookeeper";
  static final int DEFAULT_PORT = 2181;
  static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(15);
  static final Duration MIN_SESSION_TIMEOUT = Duration.ofMillis(100);
  static final Duration MAX_SESSION_TIMEOUT = Duration.ofHours(24);

  private static final String FORM =
      "zookeeper://host:port[,host:port...][/chroot][?sessionTimeout=15s]";

  ZooKeeperUri {
    Objects.requireNonNull(servers, "servers");
    Objects.requireNonNull(chroot, "chroot");
    Objects.requireNonNull(sessionTimeout, "sessionTimeout");
  }

  /** {@return the connect string ZooKeeper takes: servers, then the chroot} */
  String connectString() {
    return servers + chroot;
  }

  /** {@return the URI in canonical form, as {@code LeaseBackend.uri()} reports it} */
  @Override
  public String toString() {
    return SCHEME + "://" + servers + chroot + "?sessionTimeout=" + sessionTimeout.toMillis() + "ms";
  }

  static ZooKeeperUri parse(String uri) {
    Objects.requireNonNull(uri, "uri");
    String prefix = SCHEME + "://";
    if (!uri.regionMatches(true, 0, prefix, 0, prefix.length())) {
      throw bad(uri, "it must start with " + prefix);
    }
    String rest = uri.substring(prefix.length());
    String query = "";
    int q = rest.indexOf('?');
    if (q >= 0) {
      query = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    int slash = rest.indexOf('/');
    String hosts = slash >= 0 ? rest.substring(0, slash) : rest;
    String chroot = slash >= 0 ? rest.substring(slash) : "";
    if (hosts.isEmpty()) {
      throw bad(uri, "it names no server");
    }
    List<String> servers = new ArrayList<>();
    for (String server : hosts.split(",", -1)) {
      servers.add(server(uri, server));
    }
    return new ZooKeeperUri(String.join(",", servers), chroot(uri, chroot), sessionTimeout(uri, query));
  }

  private static String server(String uri, String server) {
    if (server.isEmpty()) {
      throw bad(uri, "its server list has an empty entry");
    }
    String host = server;
    String port = null;
    if (server.startsWith("[")) { // [IPv6]:port
      int close = server.indexOf(']');
      if (close < 0) {
        throw bad(uri, "server '" + server + "' opens '[' without closing it");
      }
      host = server.substring(0, close + 1);
      String after = server.substring(close + 1);
      if (!after.isEmpty()) {
        if (!after.startsWith(":")) {
          throw bad(uri, "server '" + server + "' must be [address]:port");
        }
        port = after.substring(1);
      }
    } else {
      int colon = server.lastIndexOf(':');
      if (colon >= 0) {
        host = server.substring(0, colon);
        port = server.substring(colon + 1);
      }
    }
    if (host.isEmpty() || host.chars().anyMatch(c -> c <= ' ' || c == '@')) {
      throw bad(uri, "server '" + server + "' has no valid host name");
    }
    int p = DEFAULT_PORT;
    if (port != null) {
      try {
        p = Integer.parseInt(port);
      } catch (NumberFormatException e) {
        p = -1;
      }
      if (p < 1 || p > 65535) {
        throw bad(uri, "the port of server '" + server + "' must be 1-65535; was '" + port + "'");
      }
    }
    return host + ":" + p;
  }

  private static String chroot(String uri, String chroot) {
    String c = chroot;
    while (c.endsWith("/")) {
      c = c.substring(0, c.length() - 1);
    }
    if (c.isEmpty()) {
      return "";
    }
    for (String element : c.substring(1).split("/", -1)) {
      if (element.isEmpty() || element.equals(".") || element.equals("..")) {
        throw bad(
            uri, "the chroot '" + chroot + "' must be an absolute path without empty, '.' or '..'"
                + " elements");
      }
      if (element.chars().anyMatch(ch -> Character.isISOControl(ch) || ch == '?' || ch == '#')) {
        throw bad(uri, "the chroot '" + chroot + "' contains a character ZooKeeper rejects");
      }
    }
    return c;
  }

  private static Duration sessionTimeout(String uri, String query) {
    Duration timeout = DEFAULT_SESSION_TIMEOUT;
    if (query.isEmpty()) {
      return timeout;
    }
    for (String parameter : query.split("&", -1)) {
      int eq = parameter.indexOf('=');
      String key = eq >= 0 ? parameter.substring(0, eq) : parameter;
      String value = eq >= 0 ? parameter.substring(eq + 1) : "";
      if (!key.equals("sessionTimeout")) {
        throw bad(uri, "unknown parameter '" + key + "'; the only parameter is sessionTimeout");
      }
      timeout = duration(uri, value);
    }
    return timeout;
  }

  /** Parses {@code 1500ms}, {@code 15s}, {@code 2m} or an ISO-8601 duration such as {@code PT15S}. */
  private static Duration duration(String uri, String value) {
    Duration d;
    String v = value.strip().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("pt")) {
        d = Duration.parse(v.toUpperCase(Locale.ROOT));
      } else if (v.endsWith("ms")) {
        d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      } else if (v.endsWith("s")) {
        d = Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1)));
      } else if (v.endsWith("m")) {
        d = Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1)));
      } else {
        d = null;
      }
    } catch (NumberFormatException | DateTimeParseException | ArithmeticException e) {
      d = null;
    }
    if (d == null || d.compareTo(MIN_SESSION_TIMEOUT) < 0 || d.compareTo(MAX_SESSION_TIMEOUT) > 0) {
      throw new IllegalArgumentException(
          "sessionTimeout must be a duration from 100ms to 24h, such as 15s, 1500ms or PT15S; was '"
              + value + "' in '" + uri + "'");
    }
    return d;
  }

  private static IllegalArgumentException bad(String uri, String why) {
    return new IllegalArgumentException(
        "ZooKeeper backend URI '" + uri + "' is malformed: " + why + "; expected " + FORM);
  }
}
