package io.leasehold.bench.cluster;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/** How to start a server JVM like this one: the same Java, the same class path. */
final class Jvm {

  private Jvm() {}

  /** {@return the {@code java} launcher of the running JVM} */
  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /**
   * {@return this JVM's class path, every entry made absolute}: the servers run in their member
   * directories, and {@code java -jar target/leasehold-bench.jar} gives a relative one. It holds the
   * core server ({@code leasehold-cli}) and ZooKeeper's server classes (the {@code zookeeper} jar
   * that Curator brings).
   */
  static String classPath() {
    return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(entry -> !entry.isEmpty())
        .map(entry -> Path.of(entry).toAbsolutePath().normalize().toString())
        .collect(Collectors.joining(File.pathSeparator));
  }

  /**
   * The servers' logging (slf4j-simple), set on the command line so that it does not depend on
   * which {@code simplelogger.properties} the class path offers first: warnings, Leasehold's own
   * INFO lines (a node's start, the elections it wins), with the time of day.
   */
  static List<String> loggingOptions() {
    return List.of(
        "-Dorg.slf4j.simpleLogger.logFile=System.err",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.log.io.leasehold=info",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS");
  }
}
