package io.leasehold.server.http;

import io.leasehold.server.NodeSnapshot;

import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The nodes' metrics in Prometheus's text exposition format 0.0.4: each family once, with its
 * HELP and TYPE, then one sample per node labelled {@code node}. Low cardinality: no lease names.
 */
public final class PrometheusText {

  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private static final List<String> ROLES = List.of("LEADER", "FOLLOWER", "CANDIDATE", "LISTENER", "UNKNOWN");

  private PrometheusText() {}

  static String render(List<NodeSnapshot> nodes) {
    StringBuilder out = new StringBuilder(4096);
    StringBuilder roles = new StringBuilder();
    roles.append("# HELP leasehold_raft_role The node's Raft role: 1 for the role it has, 0 for the others.\n");
    roles.append("# TYPE leasehold_raft_role gauge\n");
    for (NodeSnapshot n : nodes) {
      for (String role : ROLES) {
        roles.append("leasehold_raft_role{node=\"").append(label(n.id())).append("\",role=\"").append(role)
            .append("\"} ").append(n.role().equals(role) ? 1 : 0).append('\n');
      }
    }
    out.append(roles);
    gauge(out, nodes, "leasehold_raft_leader_ready", "1 when the node leads and has committed an entry of its term.", n -> n.leaderReady() ? 1 : 0);
    gauge(out, nodes, "leasehold_raft_has_leader", "1 when the node knows a leader.", n -> n.leaderId().isEmpty() ? 0 : 1);
    gauge(out, nodes, "leasehold_raft_term", "The node's current Raft term (each election raises it).", NodeSnapshot::term);
    gauge(out, nodes, "leasehold_raft_commit_index", "The highest commit index the node knows of.", NodeSnapshot::commitIndex);
    gauge(out, nodes, "leasehold_raft_applied_index", "The last log index the node applied.", NodeSnapshot::appliedIndex);
    gauge(out, nodes, "leasehold_raft_apply_lag", "Committed entries the node has not applied yet.", NodeSnapshot::applyLag);
    StringBuilder peers = new StringBuilder();
    peers.append("# HELP leasehold_raft_peer_commit_lag Entries a member's commit index is behind the highest this node knows of; -1 if unknown.\n");
    peers.append("# TYPE leasehold_raft_peer_commit_lag gauge\n");
    for (NodeSnapshot n : nodes) {
      for (NodeSnapshot.PeerCommit p : n.peers()) {
        peers.append("leasehold_raft_peer_commit_lag{node=\"").append(label(n.id())).append("\",peer=\"").append(label(p.id()))
            .append("\"} ").append(p.commitIndex() < 0 ? -1 : Math.max(0, n.commitIndex() - p.commitIndex())).append('\n');
      }
    }
    out.append(peers);
    counter(out, nodes, "leasehold_leaderships_total", "Times the node became a ready leader since it started.", NodeSnapshot::leaderships);
    gauge(out, nodes, "leasehold_sessions", "Sessions in the node's replica.", NodeSnapshot::sessions);
    gauge(out, nodes, "leasehold_keys", "Keys in the node's replica.", NodeSnapshot::keys);
    gauge(out, nodes, "leasehold_leases_held", "Named leases held, in the node's replica.", NodeSnapshot::leasesHeld);
    gauge(out, nodes, "leasehold_revision", "The replica's revision.", NodeSnapshot::revision);
    gauge(out, nodes, "leasehold_data_bytes",
        "Data bytes in the node's replica (keys, values, session owners, 256 per entry), as --max-data-bytes counts them.",
        NodeSnapshot::dataBytes);
    gauge(out, nodes, "leasehold_data_bytes_limit",
        "The node's --max-data-bytes: at or over it, writes that add data are refused.", NodeSnapshot::maxDataBytes);
    counter(out, nodes, "leasehold_lease_expiries_total", "Lease tenures the replica saw end with their session's expiry.", NodeSnapshot::leaseExpiries);
    counter(out, nodes, "leasehold_keepalives_total", "Keep-alive messages the node answered.", NodeSnapshot::keepAlives);
    gauge(out, nodes, "leasehold_client_connections", "Client connections open on the node.", NodeSnapshot::clientConnections);
    counter(out, nodes, "leasehold_client_connections_total",
        "Client connections the node accepted since it started (aged connections come back as new ones).",
        NodeSnapshot::clientConnectionsTotal);
    counter(out, nodes, "leasehold_client_connections_refused_total",
        "Client connections the node closed as soon as it accepted them, over --max-connections or --max-connections-per-address.",
        NodeSnapshot::clientConnectionsRefused);
    out.append("# HELP leasehold_write_seconds Client writes the node took, from receipt to answer (either way).\n");
    out.append("# TYPE leasehold_write_seconds summary\n");
    for (NodeSnapshot n : nodes) {
      out.append("leasehold_write_seconds_count{node=\"").append(label(n.id())).append("\"} ").append(n.writes()).append('\n');
      out.append("leasehold_write_seconds_sum{node=\"").append(label(n.id())).append("\"} ").append(n.writeNanos() / 1e9).append('\n');
    }
    return out.toString();
  }

  private static void gauge(StringBuilder out, List<NodeSnapshot> nodes, String name, String help, ToDoubleFunction<NodeSnapshot> value) {
    family(out, nodes, name, help, "gauge", value);
  }

  private static void counter(StringBuilder out, List<NodeSnapshot> nodes, String name, String help, ToDoubleFunction<NodeSnapshot> value) {
    family(out, nodes, name, help, "counter", value);
  }

  private static void family(
      StringBuilder out, List<NodeSnapshot> nodes, String name, String help, String type, ToDoubleFunction<NodeSnapshot> value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    for (NodeSnapshot n : nodes) {
      double v = value.applyAsDouble(n);
      out.append(name).append("{node=\"").append(label(n.id())).append("\"} ");
      if (v == Math.rint(v) && Math.abs(v) < 1e15) {
        out.append((long) v);
      } else {
        out.append(v);
      }
      out.append('\n');
    }
  }

  /** A label value escaped as the format asks: backslash, double quote and line feed. */
  static String label(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }
}
