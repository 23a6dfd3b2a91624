package io.leasehold.client;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Serves {@code leasehold://host:port[,host:port...]}: the consistent core's nodes (any subset
 * works; list them all so the client can fail over).
 */
public final class CoreBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public CoreBackendProvider() {}

  @Override
  public String scheme() {
    return "leasehold";
  }

  @Override
  public LeaseBackend open(String uri) {
    return CoreBackend.open(uri.strip(), endpoints(uri));
  }

  /**
   * Parses the node list of a {@code leasehold://} URI.
   *
   * @param uri the URI
   * @return the nodes, in the order given
   * @throws IllegalArgumentException naming what is wrong
   */
  public static List<InetSocketAddress> endpoints(String uri) {
    String u = uri.strip();
    String prefix = "leasehold://";
    if (!u.regionMatches(true, 0, prefix, 0, prefix.length())) {
      throw new IllegalArgumentException("a core URI looks like leasehold://host:port,host:port; was '" + uri + "'");
    }
    String rest = u.substring(prefix.length());
    int end = rest.indexOf('/');
    if (end >= 0) {
      if (end != rest.length() - 1) {
        throw new IllegalArgumentException("a core URI takes no path or options; was '" + uri + "'");
      }
      rest = rest.substring(0, end);
    }
    if (rest.isEmpty()) {
      throw new IllegalArgumentException("a core URI needs at least one host:port, e.g. leasehold://127.0.0.1:7000; was '" + uri + "'");
    }
    List<InetSocketAddress> endpoints = new ArrayList<>();
    for (String part : rest.split(",")) {
      int colon = part.lastIndexOf(':');
      if (colon <= 0 || colon == part.length() - 1) {
        throw new IllegalArgumentException("'" + part + "' in '" + uri + "' must be host:port");
      }
      int port;
      try {
        port = Integer.parseInt(part.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("port of '" + part + "' in '" + uri + "' is not a number");
      }
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port of '" + part + "' must be between 1 and 65535; was " + port);
      }
      endpoints.add(InetSocketAddress.createUnresolved(part.substring(0, colon), port));
    }
    return List.copyOf(endpoints);
  }
}
