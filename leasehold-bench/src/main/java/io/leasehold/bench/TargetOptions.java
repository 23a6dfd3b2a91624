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

  /** {@return the target; the caller closes it} */
  Target open() {
    return choice.backend != null ? Target.ofUri(choice.backend) : Target.start(choice.start.name());
  }

  boolean starts() {
    return choice.start != null;
  }

  String backend() {
    return choice.backend;
  }
}
