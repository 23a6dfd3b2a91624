package io.leasehold.client;

import io.leasehold.BackendUris;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;
import io.leasehold.spi.UriEscapes;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Serves {@code leasehold://host:port[,host:port...]}: the consistent core's nodes (any subset
 * works; list them all so the client can fail over), in plaintext. {@link
 * SecureCoreBackendProvider} serves the same over TLS, {@code
 * leaseholds://host:port,...?ca=FILE[&cert=FILE&key=FILE]}.
 */
public final class CoreBackendProvider implements LeaseBackendProvider {

  /** A host as gRPC resolves it: a DNS name, an IPv4 address, or an IPv6 literal in brackets. */
  private static final java.util.regex.Pattern VALID_HOST =
      java.util.regex.Pattern.compile("[A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.%A-Za-z]+\\]");

  /** The parameters a {@code leaseholds://} URI takes. */
  static final Set<String> TLS_PARAMETERS = Set.of("ca", "cert", "key");

  /** Called by {@link java.util.ServiceLoader}. */
  public CoreBackendProvider() {}

  @Override
  public String scheme() {
    return "leasehold";
  }

  @Override
  public LeaseBackend open(String uri) {
    return CoreBackend.open(uri.strip(), target(uri));
  }

  /**
   * Parses the node list of a {@code leasehold://} or {@code leaseholds://} URI (without reading
   * a {@code leaseholds://} URI's files; {@link #target} does).
   *
   * @param uri the URI
   * @return the nodes, in the order given
   * @throws IllegalArgumentException naming what is wrong
   */
  public static List<InetSocketAddress> endpoints(String uri) {
    return parse(uri).endpoints;
  }

  /**
   * Parses a core URI: {@code leasehold://host:port,...} (plaintext), or {@code
   * leaseholds://host:port,...?ca=FILE[&cert=FILE&key=FILE]} (TLS: the nodes' certificates must
   * be issued by an authority in {@code ca} and name the hosts; {@code cert} and {@code key} are
   * the client's, for a core that asks for one). Nothing is opened.
   *
   * @param uri the URI
   * @return the nodes, and TLS for a {@code leaseholds://} URI
   * @throws IllegalArgumentException naming the part or parameter that is wrong
   */
  public static CoreTarget target(String uri) {
    Parsed p = parse(uri);
    if (!p.secure) {
      return new CoreTarget(p.endpoints, null);
    }
    String ca = p.parameters.get("ca");
    if (ca == null) {
      throw new IllegalArgumentException(
          "a leaseholds:// URI needs ca=FILE, the authorities that signed the nodes' certificates"
              + " (and cert=FILE&key=FILE when the core asks for client certificates); was '" + BackendUris.redacted(uri) + "'");
    }
    String cert = p.parameters.get("cert");
    String key = p.parameters.get("key");
    return new CoreTarget(
        p.endpoints, ClientTls.load(Path.of(ca), cert == null ? null : Path.of(cert), key == null ? null : Path.of(key)));
  }

  private record Parsed(boolean secure, List<InetSocketAddress> endpoints, Map<String, String> parameters) {}

  private static Parsed parse(String uri) {
    String u = uri.strip();
    String plain = "leasehold://";
    String secure = "leaseholds://";
    boolean tls;
    String rest;
    if (u.regionMatches(true, 0, plain, 0, plain.length())) {
      tls = false;
      rest = u.substring(plain.length());
    } else if (u.regionMatches(true, 0, secure, 0, secure.length())) {
      tls = true;
      rest = u.substring(secure.length());
    } else {
      throw new IllegalArgumentException(
          "a core URI looks like leasehold://host:port,host:port (or leaseholds://...?ca=FILE for TLS); was '" + BackendUris.redacted(uri) + "'");
    }
    Map<String, String> parameters = new LinkedHashMap<>();
    int question = rest.indexOf('?');
    String hosts = question < 0 ? rest : rest.substring(0, question);
    String query = question < 0 ? "" : rest.substring(question + 1);
    int queryAt = query.indexOf('@');
    // An '@' after the hosts' '?' but before any '=': a password holding '?' cut the hosts there.
    if (hosts.indexOf('@') >= 0 || queryAt >= 0 && (query.indexOf('=') < 0 || queryAt < query.indexOf('='))) {
      throw new IllegalArgumentException(
          "a core URI takes no user or password (user:password@host): clients authenticate with a"
              + " certificate, leaseholds://host:port,...?ca=FILE&cert=FILE&key=FILE; was '"
              + BackendUris.redacted(uri) + "'");
    }
    if (question >= 0) {
      if (!tls) {
        throw new IllegalArgumentException(
            "a leasehold:// URI takes no options; TLS parameters (ca, cert, key) go with leaseholds://; was '" + BackendUris.redacted(uri) + "'");
      }
      parseParameters(uri, rest.substring(question + 1), parameters);
      rest = rest.substring(0, question);
    }
    int end = rest.indexOf('/');
    if (end >= 0) {
      if (end != rest.length() - 1) {
        throw new IllegalArgumentException("a core URI takes no path; was '" + BackendUris.redacted(uri) + "'");
      }
      rest = rest.substring(0, end);
    }
    if (rest.isEmpty()) {
      throw new IllegalArgumentException("a core URI needs at least one host:port, e.g. leasehold://127.0.0.1:7000; was '" + BackendUris.redacted(uri) + "'");
    }
    List<InetSocketAddress> endpoints = new ArrayList<>();
    for (String part : rest.split(",", -1)) { // -1: an empty part is an error, not dropped
      int colon = part.lastIndexOf(':');
      if (colon <= 0 || colon == part.length() - 1) {
        throw new IllegalArgumentException("'" + part + "' in '" + BackendUris.redacted(uri) + "' must be host:port");
      }
      String host = part.substring(0, colon);
      if (!VALID_HOST.matcher(host).matches()) {
        throw new IllegalArgumentException(
            "host of '" + part + "' in '" + BackendUris.redacted(uri) + "' must be a DNS name or an IP address (letters,"
                + " digits, '.', '-', '_', or an IPv6 literal in brackets)");
      }
      int port;
      try {
        port = Integer.parseInt(part.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("port of '" + part + "' in '" + BackendUris.redacted(uri) + "' is not a number");
      }
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port of '" + part + "' must be between 1 and 65535; was " + port);
      }
      endpoints.add(InetSocketAddress.createUnresolved(host, port));
    }
    return new Parsed(tls, List.copyOf(endpoints), parameters);
  }

  private static void parseParameters(String uri, String query, Map<String, String> into) {
    for (String pair : query.split("&", -1)) {
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      if (!TLS_PARAMETERS.contains(name)) {
        throw new IllegalArgumentException(
            "unknown parameter '" + name + "' in core URI '" + BackendUris.redacted(uri) + "'; a leaseholds:// URI takes ca, cert and key");
      }
      String value = eq < 0 ? "" : decode(uri, name, pair.substring(eq + 1));
      if (value.isEmpty()) {
        throw new IllegalArgumentException("parameter " + name + " in core URI '" + BackendUris.redacted(uri) + "' needs a file: " + name + "=FILE");
      }
      if (into.putIfAbsent(name, value) != null) {
        throw new IllegalArgumentException("parameter " + name + " is given twice in core URI '" + BackendUris.redacted(uri) + "'");
      }
    }
  }

  /** Undoes a file name's {@code %XX} escapes ({@link UriEscapes#decode}), naming the parameter if it cannot. */
  private static String decode(String uri, String name, String value) {
    try {
      return UriEscapes.decode(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("parameter " + name + " in core URI '" + BackendUris.redacted(uri) + "' " + e.getMessage());
    }
  }
}
