package io.leasehold.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;

/** CPU time and resident memory of processes, from {@link ProcessHandle} and {@code /proc}. */
final class ProcessStats {

  private ProcessStats() {}

  /** {@return the CPU time this JVM has used so far, in nanoseconds} */
  static long ownCpuNanos() {
    return cpuNanos(ProcessHandle.current()).orElse(0);
  }

  /** {@return the CPU time (user + system) {@code p} has used, if the OS tells} */
  static OptionalLong cpuNanos(ProcessHandle p) {
    return p.info().totalCpuDuration().map(Duration::toNanos).map(OptionalLong::of).orElse(OptionalLong.empty());
  }

  /** {@return the resident set size of {@code pid} in bytes (VmRSS of /proc/PID/status)} */
  static OptionalLong rssBytes(long pid) {
    try {
      List<String> lines = Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"));
      for (String line : lines) {
        if (line.startsWith("VmRSS:")) {
          String[] parts = line.substring(6).trim().split("\\s+");
          return OptionalLong.of(Long.parseLong(parts[0]) * 1024L); // kB
        }
      }
      return OptionalLong.empty();
    } catch (IOException | RuntimeException e) {
      return OptionalLong.empty();
    }
  }
}
