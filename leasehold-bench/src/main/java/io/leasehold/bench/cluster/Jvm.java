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
   * Set on the bench's JVM (the {@code leasehold} launcher does, when a JDK 25 or newer is
   * installed): the {@code java} the server JVMs run on, core nodes and ZooKeeper servers alike.
   */
  static final String SERVER_JAVA = "leasehold.bench.serverJava";

  /** Set with {@link #SERVER_JAVA}: JVM flags for that JDK, separated by spaces. */
  static final String SERVER_JVM_OPTIONS = "leasehold.bench.serverJvmOptions";

  /**
   * Set with {@link #SERVER_JAVA}: the AOT cache a training run made for this jar, on that JDK,
   * with those flags ({@code -XX:AOTCache=}); core nodes only. Empty or unset: none.
   */
  static final String CORE_AOT_CACHE = "leasehold.bench.coreAotCache";

  /**
   * {@return the {@code java} of every server JVM}: {@link #SERVER_JAVA} when set, else the running
   * JVM's own, as before there was a choice
   */
  public static String serverJava() {
    String java = System.getProperty(SERVER_JAVA, "");
    return java.isBlank() ? java() : java;
  }

  /**
   * {@return the JVM flags that go with the AOT cache on core nodes}: {@code -XX:AOTCache=FILE} when
   * {@link #CORE_AOT_CACHE} names one (and a server JDK is set), else none. A cache the JDK finds
   * unusable (another jar, other flags) is ignored with a warning on the node's log.
   */
  public static List<String> coreAotOptions() {
    String cache = System.getProperty(CORE_AOT_CACHE, "");
    return cache.isBlank() || System.getProperty(SERVER_JAVA, "").isBlank()
        ? List.of()
        : List.of("-XX:AOTCache=" + cache);
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
   * logging, and the server JDK's flags ({@link #SERVER_JVM_OPTIONS}) when it runs on one. Only the
   * main class and its arguments differ between the two stores (and a core node's AOT cache,
   * {@link #coreAotOptions()}).
   */
  public static List<String> serverOptions() {
    List<String> options = new ArrayList<>(baseOptions());
    if (!System.getProperty(SERVER_JAVA, "").isBlank()) {
      Arrays.stream(System.getProperty(SERVER_JVM_OPTIONS, "").split(" "))
          .filter(o -> !o.isBlank())
          .forEach(options::add);
    }
    return options;
  }

  /**
   * {@return the JVM options of {@link #serverOptions()} that every Java takes}: without the server
   * JDK's own flags, for JVMs that run on {@link #java()} (the expire-storm's holders)
   */
  public static List<String> baseOptions() {
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
