package io.leasehold.zookeeper;

import io.leasehold.BackendUris;
import io.leasehold.spi.UriEscapes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A parsed {@code zookeeper://host:port[,host:port...][/chroot][?parameters]} URI. Parsing reads
 * no file: the files named are read when the backend is opened ({@link ZooKeeperSecurity}).
 *
 * @param servers the ensemble as ZooKeeper's connect string wants it: {@code host:port,...}
 * @param chroot the chroot path, starting with {@code /}, or empty for the ensemble's root
 * @param sessionTimeout the session timeout the backend asks the ensemble for
 * @param ca PEM file of the authorities to trust on a TLS client port, or {@code null}: plaintext
 * @param cert PEM file of the client's certificate chain (with {@code key}), or {@code null}
 * @param key PEM file of the client's private key (with {@code cert}), or {@code null}
 * @param user the digest user name (with {@code passwordFile}), or {@code null}: no auth, open ACLs
 * @param passwordFile the file holding the digest user's password, or {@code null}
 */
record ZooKeeperUri(
    String servers, String chroot, Duration sessionTimeout, String ca, String cert, String key,
    String user, String passwordFile) {

  static final String SCHEME = "zookeeper";
  static final int DEFAULT_PORT = 2181;
  static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(15);
  static final Duration MIN_SESSION_TIMEOUT = Duration.ofMillis(100);
  static final Duration MAX_SESSION_TIMEOUT = Duration.ofHours(24);

  private static final String FORM =
      "zookeeper://host:port[,host:port...][/chroot][?sessionTimeout=15s][&ca=FILE[&cert=FILE"
          + "&key=FILE]][&user=NAME&password-file=FILE]";

  /** The parameters, in the canonical order. */
  private static final List<String> PARAMETERS =
      List.of("sessionTimeout", "ca", "cert", "key", "user", "password-file");

  ZooKeeperUri {
    Objects.requireNonNull(servers, "servers");
    Objects.requireNonNull(chroot, "chroot");
    Objects.requireNonNull(sessionTimeout, "sessionTimeout");
  }

  ZooKeeperUri(String servers, String chroot, Duration sessionTimeout) {
    this(servers, chroot, sessionTimeout, null, null, null, null, null);
  }

  /** {@return whether the client port is TLS} */
  boolean tls() {
    return ca != null;
  }

  /** {@return whether the backend authenticates (digest) and restricts its znodes' ACLs} */
  boolean digest() {
    return user != null;
  }

  /** {@return the connect string ZooKeeper takes: servers, then the chroot} */
  String connectString() {
    return servers + chroot;
  }

  /** {@return the URI in canonical form, as {@code LeaseBackend.uri()} reports it} */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(SCHEME).append("://").append(servers).append(chroot)
        .append("?sessionTimeout=").append(sessionTimeout.toMillis()).append("ms");
    appendParameter(b, "ca", ca);
    appendParameter(b, "cert", cert);
    appendParameter(b, "key", key);
    appendParameter(b, "user", user);
    appendParameter(b, "password-file", passwordFile);
    return b.toString();
  }

  private static void appendParameter(StringBuilder b, String name, String value) {
    if (value != null) {
      b.append('&').append(name).append('=').append(UriEscapes.encode(value));
    }
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
    if (hosts.indexOf('@') >= 0) {
      throw credentials(uri);
    }
    List<String> servers = new ArrayList<>();
    try {
      for (String server : hosts.split(",", -1)) {
        servers.add(server(uri, server));
      }
    } catch (IllegalArgumentException e) {
      int at = query.indexOf('@');
      if (chroot.indexOf('@') >= 0 || at >= 0 && (query.indexOf('=') < 0 || at < query.indexOf('='))) {
        // alice:pa/ss@host or alice:pa?ss@host: the hosts end inside the password, so the server
        // the refusal would quote holds part of it.
        throw credentials(uri);
      }
      throw e;
    }
    Map<String, String> parameters = parameters(uri, query);
    String sessionTimeout = parameters.get("sessionTimeout");
    String ca = parameters.get("ca");
    String cert = parameters.get("cert");
    String key = parameters.get("key");
    String user = parameters.get("user");
    String passwordFile = parameters.get("password-file");
    if ((cert == null) != (key == null)) {
      throw bad(uri, (cert == null ? "key" : "cert") + " is given without "
          + (cert == null ? "cert" : "key") + "; a client certificate needs both");
    }
    if (cert != null && ca == null) {
      throw bad(uri, "cert and key are given without ca; TLS needs ca (the authorities that"
          + " issued the servers' certificates)");
    }
    if ((user == null) != (passwordFile == null)) {
      throw bad(uri, (user == null ? "password-file is given without user"
          : "user is given without password-file") + "; digest authentication needs both");
    }
    if (user != null && (user.isEmpty() || user.contains(":")
        || user.chars().anyMatch(Character::isISOControl))) {
      throw bad(uri, "user must be a non-empty name without ':' or control characters");
    }
    return new ZooKeeperUri(
        String.join(",", servers), chroot(uri, chroot),
        sessionTimeout == null ? DEFAULT_SESSION_TIMEOUT : duration(uri, sessionTimeout),
        ca, cert, key, user, passwordFile);
  }

  /** Splits the query; each parameter once, known, with a value (%-decoded; {@code +} stays). */
  private static Map<String, String> parameters(String uri, String query) {
    Map<String, String> parameters = new LinkedHashMap<>();
    if (query.isEmpty()) {
      return parameters;
    }
    for (String parameter : query.split("&", -1)) {
      int eq = parameter.indexOf('=');
      String name = eq >= 0 ? parameter.substring(0, eq) : parameter;
      String value = eq >= 0 ? parameter.substring(eq + 1) : "";
      if (name.equalsIgnoreCase("password")) {
        // A password in a URI ends up in logs, shell histories and process lists.
        throw bad(uri, "a password must not be written in the URI; put it in a file readable"
            + " only by this program and give password-file=FILE");
      }
      if (!PARAMETERS.contains(name)) {
        throw bad(uri, "unknown parameter '" + name + "'; the parameters are "
            + String.join(", ", PARAMETERS));
      }
      if (value.isEmpty() && !name.equals("sessionTimeout")) {
        throw bad(uri, "parameter " + name + " has no value");
      }
      if (parameters.containsKey(name)) {
        throw bad(uri, "parameter " + name + " is given twice");
      }
      parameters.put(name, name.equals("sessionTimeout") ? value : unescape(uri, name, value));
    }
    return parameters;
  }

  /** Undoes {@code %XX} escapes ({@link UriEscapes#decode}), naming the parameter if it cannot. */
  private static String unescape(String uri, String name, String value) {
    try {
      return UriEscapes.decode(value);
    } catch (IllegalArgumentException e) {
      throw bad(uri, "parameter " + name + " " + e.getMessage());
    }
  }

  /** {@return the refusal of credentials written before the hosts} */
  private static IllegalArgumentException credentials(String uri) {
    return bad(uri, "a user or password before the host (user:password@host) is not accepted (URIs"
        + " end up in logs and shell history): give user=NAME&password-file=FILE, a file readable"
        + " only by this program");
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
              + value + "' in '" + BackendUris.redacted(uri) + "'");
    }
    return d;
  }

  private static IllegalArgumentException bad(String uri, String why) {
    return new IllegalArgumentException(
        "ZooKeeper backend URI '" + BackendUris.redacted(uri) + "' is malformed: " + why + "; expected " + FORM);
  }
}
