package io.leasehold.server;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One node of a cluster as the others know it: its id, and the host and port clients use. Its
 * Raft port (for the other nodes) is the next port up.
 *
 * @param id the node's id: letters, digits, '-' and '_', 1 to 64 characters
 * @param host the host name or address clients and peers reach it at
 * @param clientPort the port of the client protocol; the Raft port is {@code clientPort + 1}
 */
public record Peer(String id, String host, int clientPort) {

  private static final Pattern ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");

  /**
   * Checks the parts.
   *
   * @param id the node's id
   * @param host its host
   * @param clientPort its client port
   */
  public Peer {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(host, "host");
    if (!ID.matcher(id).matches()) {
      throw new IllegalArgumentException(
          "node id must be 1 to 64 letters, digits, '-' or '_'; was \"" + id + "\"");
    }
    if (host.isBlank()) {
      throw new IllegalArgumentException("host of node " + id + " must not be blank");
    }
    if (clientPort < 1 || clientPort > 65534) {
      throw new IllegalArgumentException(
          "port of node " + id + " must be between 1 and 65534 (the next port is its Raft port); was "
              + clientPort);
    }
  }

  /** {@return the port the other nodes replicate through} */
  public int raftPort() {
    return clientPort + 1;
  }

  /** {@return where clients connect} */
  public InetSocketAddress clientAddress() {
    return new InetSocketAddress(host, clientPort);
  }

  /** {@return {@code host:port} of the client protocol} */
  public String clientEndpoint() {
    return host + ":" + clientPort;
  }

  /**
   * Parses {@code id=host:port,id=host:port,...}.
   *
   * @param spec the peers, as given to {@code --peers}
   * @return the peers in the order given
   * @throws IllegalArgumentException naming the part that is wrong
   */
  public static List<Peer> parseAll(String spec) {
    Objects.requireNonNull(spec, "peers");
    List<Peer> peers = new ArrayList<>();
    Set<String> ids = new HashSet<>();
    for (String part : spec.split(",")) {
      Peer peer = parseOne(part.trim(), "peers must look like id=host:port,id=host:port");
      if (!ids.add(peer.id())) {
        throw new IllegalArgumentException("node id " + peer.id() + " appears twice in the peers");
      }
      peers.add(peer);
    }
    return List.copyOf(peers);
  }

  /**
   * Parses one node, {@code id=host:port} (a membership command's argument).
   *
   * @param spec the node
   * @return the node
   * @throws IllegalArgumentException naming what is wrong, also when {@code spec} names several
   */
  public static Peer parse(String spec) {
    Objects.requireNonNull(spec, "node");
    String p = spec.trim();
    if (p.contains(",")) {
      // parseAll's split would otherwise let "a=h:1,b=h:2" pass as its first node alone.
      throw new IllegalArgumentException("\"" + p + "\" names more than one node; give one, id=host:port");
    }
    return parseOne(p, "a node must look like id=host:port");
  }

  private static Peer parseOne(String p, String shape) {
    int eq = p.indexOf('=');
    int colon = p.lastIndexOf(':');
    if (eq <= 0 || colon < eq + 2 || colon == p.length() - 1) {
      throw new IllegalArgumentException(shape + "; \"" + p + "\" does not");
    }
    int port;
    try {
      port = Integer.parseInt(p.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("port in \"" + p + "\" is not a number");
    }
    return new Peer(p.substring(0, eq), p.substring(eq + 1, colon), port);
  }

  @Override
  public String toString() {
    return id + "=" + clientEndpoint();
  }
}
