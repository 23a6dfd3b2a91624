package io.leasehold.bench;

import io.leasehold.bench.cluster.ManagedCluster;
import java.lang.management.ManagementFactory;
import java.util.Optional;

/**
 * CPU time used over one measured window: this JVM's (the load generator's, which shares the
 * machine's cores with the servers) and, on a cluster the bench started, the sum over its members.
 * {@link #start()} at the window's start, {@link #stop()} at its end, then {@link #addTo} divides by
 * the operations the window counted.
 */
final class ResourceMeter {

  private final Optional<ManagedCluster> cluster;
  private long client0;
  private long client1;
  private long t0;
  private long t1;
  private Optional<ClusterStats> server0 = Optional.empty();
  private Optional<ClusterStats> server1 = Optional.empty();

  ResourceMeter(Optional<ManagedCluster> cluster) {
    this.cluster = cluster;
  }

  /**
   * {@return the CPU time this JVM has used so far, every thread's (collector and compiler
   * included), in nanoseconds} From {@code com.sun.management.OperatingSystemMXBean}, which reads
   * the process's CPU clock; the coarser {@code /proc} figure where that bean is missing.
   */
  static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
      long nanos = os.getProcessCpuTime();
      if (nanos >= 0) {
        return nanos;
      }
    }
    return ProcessStats.ownCpuNanos();
  }

  /** {@return the machine's load average over the last minute, or NaN where the OS does not tell} */
  static double loadAverage() {
    double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    return load < 0 ? Double.NaN : load;
  }

  void start() {
    server0 = cluster.map(ClusterStats::sample);
    client0 = processCpuNanos();
    t0 = System.nanoTime();
  }

  void stop() {
    t1 = System.nanoTime();
    client1 = processCpuNanos();
    server1 = cluster.map(ClusterStats::sample);
  }

  /** {@return the window's length in seconds} */
  double seconds() {
    return (t1 - t0) / 1e9;
  }

  double clientCpuNanos() {
    return client1 - client0;
  }

  /** {@return the members' CPU nanoseconds in the window, NaN without a cluster} */
  double serverCpuNanos() {
    if (server0.isEmpty() || server1.isEmpty()) {
      return Double.NaN;
    }
    return server1.get().cpuNanosSince(server0.get());
  }

  /**
   * Adds {@code <prefix>client_cpu_cores}, {@code <prefix>client_cpu_us_per_op}, and with a
   * cluster {@code <prefix>server_cpu_cores} and {@code <prefix>server_cpu_us_per_op}.
   *
   * @param ops the operations the window counted; per-operation figures are NaN for none
   * @param per what one operation is, for the labels ("cycle", "handover", "renewal")
   */
  void addTo(Result r, String prefix, double ops, String per) {
    double seconds = seconds();
    r.figure(prefix + "client_cpu_cores", "client CPU (this JVM)", clientCpuNanos() / 1e9 / seconds, "cores");
    r.figure(prefix + "client_cpu_us_per_op", "client CPU per " + per + " (this JVM)", perOp(clientCpuNanos(), ops), "us");
    if (cluster.isPresent()) {
      r.figure(prefix + "server_cpu_cores", "server CPU (all members)", serverCpuNanos() / 1e9 / seconds, "cores");
      r.figure(prefix + "server_cpu_us_per_op", "server CPU per " + per + " (all members)", perOp(serverCpuNanos(), ops), "us");
    }
  }

  static double perOp(double nanos, double ops) {
    return ops > 0 ? nanos / 1e3 / ops : Double.NaN;
  }
}
