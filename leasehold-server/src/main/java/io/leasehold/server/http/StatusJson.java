package io.leasehold.server.http;

import io.leasehold.server.NodeSnapshot;

import io.leasehold.server.replicated.TenureChange;

import java.util.List;

/** The status page's data as JSON, written by hand (no JSON library in the server). */
public final class StatusJson {

  private StatusJson() {}

  static String render(List<NodeSnapshot> nodes, List<TenureChange> events, String notReady) {
    StringBuilder out = new StringBuilder(2048);
    out.append("{\"now\":").append(System.currentTimeMillis());
    out.append(",\"ready\":").append(notReady == null);
    out.append(",\"notReady\":").append(str(notReady == null ? "" : notReady));
    out.append(",\"nodes\":[");
    for (int i = 0; i < nodes.size(); i++) {
      NodeSnapshot n = nodes.get(i);
      if (i > 0) {
        out.append(',');
      }
      String problem = StatusHttpServer.notReady(n);
      out.append("{\"id\":").append(str(n.id()))
          .append(",\"address\":").append(str(n.address()))
          .append(",\"role\":").append(str(n.role()))
          .append(",\"term\":").append(n.term())
          .append(",\"leader\":").append(str(n.leaderId()))
          .append(",\"leaderReady\":").append(n.leaderReady())
          .append(",\"commitIndex\":").append(n.commitIndex())
          .append(",\"appliedIndex\":").append(n.appliedIndex())
          .append(",\"applyLag\":").append(n.applyLag())
          .append(",\"ready\":").append(problem == null)
          .append(",\"sessions\":").append(n.sessions())
          .append(",\"keys\":").append(n.keys())
          .append(",\"leasesHeld\":").append(n.leasesHeld())
          .append(",\"dataBytes\":").append(n.dataBytes())
          .append(",\"maxDataBytes\":").append(n.maxDataBytes())
          .append(",\"revision\":").append(n.revision())
          .append(",\"peers\":[");
      for (int j = 0; j < n.peers().size(); j++) {
        NodeSnapshot.PeerCommit p = n.peers().get(j);
        out.append(j > 0 ? "," : "").append("{\"id\":").append(str(p.id())).append(",\"commitIndex\":").append(p.commitIndex()).append('}');
      }
      out.append("]}");
    }
    out.append("],\"leases\":[");
    // The leases as the node that leads sees them (it alone knows the time left); else the first.
    NodeSnapshot source = nodes.stream().filter(NodeSnapshot::leaderReady).findFirst().orElse(nodes.isEmpty() ? null : nodes.get(0));
    if (source != null) {
      for (int i = 0; i < source.leases().size(); i++) {
        NodeSnapshot.HeldLease l = source.leases().get(i);
        out.append(i > 0 ? "," : "").append("{\"name\":").append(str(l.name()))
            .append(",\"holder\":").append(str(l.holder()))
            .append(",\"token\":").append(l.token())
            .append(",\"session\":").append(l.sessionId())
            .append(",\"ttlMillis\":").append(l.ttlMillis())
            .append(",\"remainingMillis\":").append(l.remainingMillis()).append('}');
      }
    }
    out.append("],\"events\":[");
    for (int i = 0; i < events.size(); i++) {
      TenureChange e = events.get(i);
      out.append(i > 0 ? "," : "").append("{\"revision\":").append(e.revision())
          .append(",\"type\":").append(str(e.type()))
          .append(",\"name\":").append(str(e.name()))
          .append(",\"holder\":").append(str(e.holder()))
          .append(",\"token\":").append(e.token())
          .append(",\"cause\":").append(str(e.cause())).append('}');
    }
    out.append("]}");
    return out.toString();
  }

  static String str(String s) {
    StringBuilder out = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
