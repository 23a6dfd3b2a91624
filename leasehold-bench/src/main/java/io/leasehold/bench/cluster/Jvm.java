package io.leasehold.bench.cluster;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * How to start a JVM like this one: the same Java, the same class path, and one list of JVM options
 * for every server JVM, so that the core's nodes and ZooKeeper's servers never differ in a flag.
 */
public final class Jvm {

  /** The heap of every server JVM: room for 100,000 leases and their sessions. */
  public static final String HEAP = "-Xmx1g";

  private Jvm() {}

  /** {@return the {@code java} launcher of the running JVM} */
  public static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /**
   * {@return this JVM's class path, every entry made absolute}: the servers run in their member
   * directories, and {@code java -jar target/leasehold-bench.jar} gives a relative one. It holds the
   * core server ({@code leasehold-cli}) and ZooKeeper's server classes (the {@code zookeeper} jar
   * that Curator brings).
   */
  public static String classPath() {
    return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(entry -> !entry.isEmpty())
        .map(entry -> Path.of(entry).toAbsolutePath().normalize().toString())
        .collect(Collectors.joining(File.pathSeparator));
  }

  /**
   * {@return the JVM options of every server JVM the bench starts, core node and ZooKeeper server
   * alike}: the same heap cap, the collector named rather than left to ergonomics, and the same
   * logging. Only the main class and its arguments differ between the two stores.
   */
  public static List<String> serverOptions() {
    List<String> options = new ArrayList<>(List.of(HEAP, "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError"));
    options.addAll(loggingOptions());
    return options;
  }

  /**
   * The servers' logging (slf4j-simple), set on the command line so that it does not depend on
   * which {@code simplelogger.properties} the class path offers first: warnings, Leasehold's own
   * INFO lines (a node's start, the elections it wins) and ZooKeeper's quorum INFO lines (its
   * elections and syncs), with the time of day. Each store ignores the other's logger.
   */
  static List<String> loggingOptions() {
    List<String> options = new java.util.ArrayList<>(List.of(
        "-Dorg.slf4j.simpleLogger.logFile=System.err",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.log.io.leasehold=info",
        "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.quorum=info",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS"));
    if (Boolean.getBoolean(RATIS_LOGS)) {
      // Ratis's own account of a hand-over or an election (votes, leader start, first append),
      // which BENCHMARKS.md's step-by-step timings are read from.
      options.add("-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl=info");
      options.add("-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.RaftServer$Division=info");
    }
    return List.copyOf(options);
  }

  /** Set on the bench's JVM ({@code -Dleasehold.bench.ratisLogs=true}): core nodes log Ratis at INFO. */
  static final String RATIS_LOGS = "leasehold.bench.ratisLogs";
}
