package io.leasehold.bench;

import io.leasehold.bench.cluster.ManagedCluster;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** CPU time and resident memory of every running member of a cluster, at one instant. */
record ClusterStats(List<Member> members) {

  /**
   * One member's numbers.
   *
   * @param id the member's id
   * @param pid its process id
   * @param cpuNanos CPU time used so far; -1 if unknown
   * @param rssBytes resident memory now; -1 if unknown
   */
  record Member(String id, long pid, long cpuNanos, long rssBytes) {}

  static ClusterStats sample(ManagedCluster cluster) {
    List<Member> out = new ArrayList<>();
    for (ManagedCluster.Member m : cluster.members()) {
      m.process().filter(ProcessHandle::isAlive).ifPresent(p -> out.add(new Member(
          m.id(),
          p.pid(),
          ProcessStats.cpuNanos(p).orElse(-1),
          ProcessStats.rssBytes(p.pid()).orElse(-1))));
    }
    return new ClusterStats(out);
  }

  /** {@return CPU nanoseconds used between {@code before} and this sample, by processes in both} */
  long cpuNanosSince(ClusterStats before) {
    long sum = 0;
    for (Member m : members) {
      for (Member b : before.members) {
        if (b.pid == m.pid && b.cpuNanos >= 0 && m.cpuNanos >= 0) {
          sum += m.cpuNanos - b.cpuNanos;
        }
      }
    }
    return sum;
  }

  /** {@return resident memory gained since {@code before}, over processes in both} */
  long rssBytesSince(ClusterStats before) {
    long sum = 0;
    for (Member m : members) {
      for (Member b : before.members) {
        if (b.pid == m.pid && b.rssBytes >= 0 && m.rssBytes >= 0) {
          sum += m.rssBytes - b.rssBytes;
        }
      }
    }
    return sum;
  }

  long rssBytes() {
    return members.stream().mapToLong(m -> Math.max(0, m.rssBytes)).sum();
  }

  /** {@return the members as JSON-ready maps} */
  List<Map<String, Object>> toJson() {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Member m : members) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("id", m.id);
      j.put("pid", m.pid);
      j.put("cpu_s", m.cpuNanos / 1e9);
      j.put("rss_bytes", m.rssBytes);
      out.add(j);
    }
    return out;
  }
}
