package io.leasehold.etcd;

import io.leasehold.BackendUris;
import io.leasehold.spi.UriEscapes;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A parsed {@code etcd://host:port[,host:port...][?namespace=/path][&user=NAME&password-file=FILE]}
 * URI, or its TLS form {@code etcds://...?ca=FILE[&cert=FILE&key=FILE]}. Parsing reads no file:
 * the files are read when the backend opens ({@link EtcdAccess}).
 *
 * @param secure whether the members are reached over TLS ({@code etcds://})
 * @param endpoints the members to connect to, as {@code http://host:port} (jetcd takes the host
 *     and port; TLS is switched on by the SSL context, not by the endpoint's scheme)
 * @param namespace the key prefix under which every lease key lives, starting with {@code /}
 * @param ca the trusted authorities' certificates (PEM); null unless given
 * @param cert the client's certificate chain (PEM); null unless given
 * @param key the client's private key (PEM, PKCS#8); null exactly when {@code cert} is
 * @param user the etcd user to authenticate as; null for none
 * @param passwordFile the file holding that user's password; null unless given
 */
record EtcdUri(
    boolean secure,
    List<URI> endpoints,
    String namespace,
    Path ca,
    Path cert,
    Path key,
    String user,
    Path passwordFile) {

  static final String DEFAULT_NAMESPACE = "/leasehold";
  static final String FORM =
      "etcd://host:port[,host:port...][?namespace=/path][&user=NAME&password-file=FILE], or over"
          + " TLS etcds://host:port[,...]?ca=FILE[&cert=FILE&key=FILE][&namespace=...][&user=...]";
  private static final Set<String> OPTIONS =
      Set.of("namespace", "ca", "cert", "key", "user", "password-file");

  /**
   * Parses the URI an application gave and checks that its parts go together.
   *
   * @throws IllegalArgumentException naming the part that is wrong and the expected form
   */
  static EtcdUri parse(String uri) {
    return parseParts(uri).checked(uri);
  }

  /**
   * Parses the URI without the checks of what must come together ({@link #checked}): the
   * builder adds files and credentials first.
   */
  static EtcdUri parseParts(String uri) {
    String text = uri.strip();
    boolean secure;
    int schemeEnd;
    if (text.regionMatches(true, 0, "etcd://", 0, 7)) {
      secure = false;
      schemeEnd = 7;
    } else if (text.regionMatches(true, 0, "etcds://", 0, 8)) {
      secure = true;
      schemeEnd = 8;
    } else {
      throw bad(uri, "it must start with 'etcd://' or, over TLS, 'etcds://'");
    }
    String rest = text.substring(schemeEnd);
    String query = "";
    int q = rest.indexOf('?');
    if (q >= 0) {
      query = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    if (rest.endsWith("/")) {
      rest = rest.substring(0, rest.length() - 1);
    }
    if (rest.isEmpty()) {
      throw bad(uri, "it names no host");
    }
    if (rest.indexOf('@') >= 0) {
      // Refused as password= is; the message shows the URI with the password hidden.
      throw credentials(uri);
    }
    List<URI> endpoints = new ArrayList<>();
    try {
      for (String hostPort : rest.split(",", -1)) {
        endpoints.add(endpoint(uri, hostPort.strip()));
      }
    } catch (IllegalArgumentException e) {
      int at = query.indexOf('@');
      if (at >= 0 && (query.indexOf('=') < 0 || at < query.indexOf('='))) {
        // alice:pa?ss@host: the hosts end inside the password, so the host:port the refusal
        // would quote holds part of it.
        throw credentials(uri);
      }
      throw e;
    }
    String namespace = null;
    Path ca = null;
    Path cert = null;
    Path key = null;
    String user = null;
    Path passwordFile = null;
    if (!query.isEmpty()) {
      for (String param : query.split("&", -1)) {
        int eq = param.indexOf('=');
        String name = eq < 0 ? param : param.substring(0, eq);
        String value = eq < 0 ? "" : param.substring(eq + 1);
        if (name.equals("password")) {
          // Refused rather than taken: a URI is printed in logs, kept in shell history and in
          // configuration that is not treated as a secret.
          throw bad(uri, "password= is not accepted in a URI (URIs end up in logs and shell"
              + " history): put the password in a file readable only by this program and give"
              + " password-file=FILE");
        }
        if (!OPTIONS.contains(name)) {
          throw bad(uri, "unknown option '" + name + "' (the options are namespace, ca, cert, key,"
              + " user and password-file)");
        }
        if (value.isEmpty()) {
          throw bad(uri, name + "= needs a value");
        }
        boolean twice =
            switch (name) {
              case "namespace" -> namespace != null;
              case "ca" -> ca != null;
              case "cert" -> cert != null;
              case "key" -> key != null;
              case "user" -> user != null;
              default -> passwordFile != null;
            };
        if (twice) {
          throw bad(uri, name + "= is given twice");
        }
        switch (name) {
          case "namespace" -> namespace = namespace(uri, value);
          case "ca" -> ca = file(uri, name, value);
          case "cert" -> cert = file(uri, name, value);
          case "key" -> key = file(uri, name, value);
          case "user" -> user = user(uri, decode(uri, name, value));
          default -> passwordFile = file(uri, name, value);
        }
      }
    }
    return new EtcdUri(
        secure, List.copyOf(endpoints), namespace == null ? DEFAULT_NAMESPACE : namespace,
        ca, cert, key, user, passwordFile);
  }

  /**
   * {@return this URI, checked that its parts go together} TLS files only with {@code
   * etcds://}, which needs a CA; {@code cert} with {@code key}; a password file only for a user.
   * (A user without a password file is checked when the backend opens: the builder may give the
   * password itself.)
   *
   * @param given the URI as given, for the message
   */
  EtcdUri checked(String given) {
    if (!secure && (ca != null || cert != null || key != null)) {
      throw bad(given, "ca=, cert= and key= are for TLS: a URI that speaks TLS starts with"
          + " 'etcds://' (an 'etcd://' URI is plaintext)");
    }
    if (secure && ca == null) {
      throw bad(given, "an etcds:// URI needs ca=FILE (the authorities that issued the members'"
          + " certificates)");
    }
    if (cert != null && key == null) {
      throw bad(given, "cert= needs key= (the client certificate's private key)");
    }
    if (key != null && cert == null) {
      throw bad(given, "key= needs cert= (a client key without its certificate is of no use)");
    }
    if (passwordFile != null && user == null) {
      throw bad(given, "password-file= needs user= (whose password it is)");
    }
    return this;
  }

  /** {@return this URI with the TLS and credential parts given to the builder} */
  EtcdUri with(Path ca, Path cert, Path key, String user, Path passwordFile) {
    return new EtcdUri(secure, endpoints, namespace, ca, cert, key, user, passwordFile);
  }

  private static URI endpoint(String uri, String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    if (hostPort.isEmpty() || colon <= 0 || colon == hostPort.length() - 1) {
      throw bad(uri, "'" + hostPort + "' is not host:port");
    }
    String host = hostPort.substring(0, colon);
    if (host.contains(":") && !(host.startsWith("[") && host.endsWith("]"))) {
      throw bad(uri, "IPv6 address '" + host + "' must be in brackets, as [::1]:2379");
    }
    int port;
    try {
      port = Integer.parseInt(hostPort.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 1 || port > 65535) {
      throw bad(uri, "port of '" + hostPort + "' must be 1-65535");
    }
    for (int i = 0; i < host.length(); i++) {
      char c = host.charAt(i);
      if (c <= ' ' || c == '/' || c == '@' || c == '#') {
        throw bad(uri, "host '" + host + "' contains '" + c + "'");
      }
    }
    // java.net.URI has the last word on what a host is; its own refusal would name neither this
    // URI nor its form (found by EtcdUriFuzzTest), and a name it takes only as a "registry"
    // authority (etcd_1, a%41) has no host: jetcd's builder would refuse it later, in its words.
    URI endpoint;
    try {
      endpoint = URI.create("http://" + host.toLowerCase(Locale.ROOT) + ":" + port);
    } catch (IllegalArgumentException e) {
      endpoint = null;
    }
    if (endpoint == null || endpoint.getHost() == null) {
      throw bad(uri, "host '" + host + "' is not a host name or an IP address");
    }
    return endpoint;
  }

  private static String namespace(String uri, String value) {
    if (!value.startsWith("/") || value.length() < 2 || value.endsWith("/")) {
      throw bad(
          uri, "namespace must start with '/', not end with '/' and not be '/' alone; was '"
              + value + "'");
    }
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i)) || value.charAt(i) == ' ') {
        throw bad(uri, "namespace must not contain spaces or control characters");
      }
    }
    return value;
  }

  private static Path file(String uri, String name, String value) {
    String decoded = decode(uri, name, value);
    try {
      return Path.of(decoded);
    } catch (InvalidPathException e) {
      throw bad(uri, name + "= is not a file name: " + e.getReason());
    }
  }

  private static String user(String uri, String value) {
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i))) {
        throw bad(uri, "user= must not contain control characters");
      }
    }
    return value;
  }

  /** Undoes {@code %XX} escapes ({@link UriEscapes#decode}), naming the parameter if it cannot. */
  private static String decode(String uri, String name, String value) {
    if (!StandardCharsets.UTF_8.newEncoder().canEncode(value)) {
      throw bad(uri, name + "= is not valid text (a lone surrogate)");
    }
    try {
      return UriEscapes.decode(value);
    } catch (IllegalArgumentException e) {
      throw bad(uri, name + "= " + e.getMessage());
    }
  }

  /** {@return the refusal of credentials written before the hosts} */
  private static IllegalArgumentException credentials(String uri) {
    return bad(uri, "a user or password before the host (user:password@host) is not accepted (URIs"
        + " end up in logs and shell history): give user=NAME&password-file=FILE, a file readable"
        + " only by this program");
  }

  private static IllegalArgumentException bad(String uri, String why) {
    return new IllegalArgumentException(
        "etcd backend URI must look like " + FORM + "; " + why + "; was '"
            + BackendUris.redacted(uri) + "'");
  }

  /**
   * {@return the URI in canonical form} It names the files and the user, never a password: it is
   * the backend's name in logs and messages.
   */
  String canonical() {
    StringBuilder s = new StringBuilder(secure ? "etcds://" : "etcd://");
    for (int i = 0; i < endpoints.size(); i++) {
      if (i > 0) {
        s.append(',');
      }
      s.append(endpoints.get(i).getAuthority());
    }
    char sep = '?';
    if (!namespace.equals(DEFAULT_NAMESPACE)) {
      s.append(sep).append("namespace=").append(namespace);
      sep = '&';
    }
    for (String[] p : new String[][] {
        {"ca", ca == null ? null : ca.toString()},
        {"cert", cert == null ? null : cert.toString()},
        {"key", key == null ? null : key.toString()},
        {"user", user},
        {"password-file", passwordFile == null ? null : passwordFile.toString()}}) {
      if (p[1] != null) {
        s.append(sep).append(p[0]).append('=').append(UriEscapes.encode(p[1]));
        sep = '&';
      }
    }
    return s.toString();
  }
}
