package io.leasehold.etcd;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A parsed {@code etcd://host:port[,host:port...][?namespace=/path]} URI.
 *
 * @param endpoints the members to connect to, as {@code http://host:port}
 * @param namespace the key prefix under which every lease key lives, starting with {@code /}
 */
record EtcdUri(List<URI> endpoints, String namespace) {

  static final String DEFAULT_NAMESPACE = "/leasehold";
  private static final String FORM = "etcd://host:port[,host:port...][?namespace=/path]";

  /**
   * Parses the URI an application gave.
   *
   * @throws IllegalArgumentException naming the part that is wrong and the expected form
   */
  static EtcdUri parse(String uri) {
    String text = uri.strip();
    if (!text.regionMatches(true, 0, "etcd://", 0, 7)) {
      throw bad(uri, "it must start with 'etcd://'");
    }
    String rest = text.substring(7);
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
    List<URI> endpoints = new ArrayList<>();
    for (String hostPort : rest.split(",", -1)) {
      endpoints.add(endpoint(uri, hostPort.strip()));
    }
    String namespace = DEFAULT_NAMESPACE;
    if (!query.isEmpty()) {
      for (String param : query.split("&", -1)) {
        int eq = param.indexOf('=');
        String key = eq < 0 ? param : param.substring(0, eq);
        String value = eq < 0 ? "" : param.substring(eq + 1);
        if (!key.equals("namespace")) {
          throw bad(uri, "unknown option '" + key + "' (the only option is 'namespace')");
        }
        namespace = namespace(uri, value);
      }
    }
    return new EtcdUri(List.copyOf(endpoints), namespace);
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

  private static IllegalArgumentException bad(String uri, String why) {
    return new IllegalArgumentException(
        "etcd backend URI must look like " + FORM + "; " + why + "; was '" + uri + "'");
  }

  /** {@return the URI in canonical form} */
  String canonical() {
    StringBuilder s = new StringBuilder("etcd://");
    for (int i = 0; i < endpoints.size(); i++) {
      if (i > 0) {
        s.append(',');
      }
      s.append(endpoints.get(i).getAuthority());
    }
    if (!namespace.equals(DEFAULT_NAMESPACE)) {
      s.append("?namespace=").append(namespace);
    }
    return s.toString();
  }
}
