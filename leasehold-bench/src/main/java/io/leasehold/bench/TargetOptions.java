package io.leasehold.bench;

import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Option;

/** Which store to measure: {@code --backend URI} or {@code --start KIND}, exactly one. */
final class TargetOptions {

  /** The kinds of cluster the bench can start. */
  enum Kind {
    core,
    etcd,
    zookeeper
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Choice choice;

  static final class Choice {
    @Option(
        names = "--backend",
        paramLabel = "URI",
        description = "Measure a store that runs already: memory: (in this JVM), leasehold://host:port,...,"
            + " etcd://host:2379,..., zookeeper://host:2181,... Server CPU and memory are not measured.")
    String backend;

    @Option(
        names = "--start",
        paramLabel = "KIND",
        description = "Start a 3-member cluster of ${COMPLETION-CANDIDATES} on loopback under a temporary"
            + " directory, measure it (servers' CPU and memory included), stop it and delete its data.")
    Kind start;
  }

  @Option(
      names = "--keep-logs",
      paramLabel = "DIR",
      description = "With --start: copy the members' logs (<id>.log: elections, hand-overs, errors) into DIR"
          + " when the cluster stops, before its data is deleted.")
  java.nio.file.Path keepLogs;

  /** {@return the target; the caller closes it} */
  Target open() {
    return choice.backend != null
        ? Target.ofUri(choice.backend)
        : Target.start(choice.start.name(), null, keepLogs);
  }

  /** {@return a problem with the options, or null}: {@code --keep-logs} needs a cluster the bench starts */
  String problem() {
    return keepLogs != null && choice.start == null
        ? "--keep-logs needs --start: the bench keeps the logs of a cluster it started, not of " + choice.backend
        : null;
  }

  boolean starts() {
    return choice.start != null;
  }

  String backend() {
    return choice.backend;
  }
}
