package io.leasehold.client;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;

/**
 * What a core URI names: the nodes, and TLS when it is a {@code leaseholds://} URI.
 *
 * @param endpoints the nodes' client addresses, in the order given
 * @param tls how to reach them over TLS; null for plaintext ({@code leasehold://})
 */
public record CoreTarget(List<InetSocketAddress> endpoints, ClientTls tls) {

  /** Checks the parts. */
  public CoreTarget {
    Objects.requireNonNull(endpoints, "endpoints");
    endpoints = List.copyOf(endpoints);
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("at least one node address is needed");
    }
  }

  /** {@return whether the nodes are reached over TLS} */
  public boolean secure() {
    return tls != null;
  }
}
