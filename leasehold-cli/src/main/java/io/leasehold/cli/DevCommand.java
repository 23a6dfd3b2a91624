package io.leasehold.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold dev}: will start a local consistent core to develop against; until that exists
 * it runs the in-memory demo, with the same options.
 */
@Command(
    name = "dev",
    header = "Will run a local Leasehold cluster to develop against; for now, the demo.",
    description = {
      "Will start a local Leasehold cluster (the consistent core) to develop against. The core is"
          + " not built yet, so for now this runs the in-memory demo; it takes the demo's options.",
    })
final class DevCommand implements Callable<Integer> {

  @Mixin private DemoOptions options;

  @Spec private CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    DemoConfig config = options.config();
    spec.commandLine()
        .getErr()
        .println(
            "leasehold dev: the consistent core (a local Raft cluster) is not built yet;"
                + " running the in-memory demo meanwhile.");
    spec.commandLine().getErr().flush();
    return new Demo(config, spec.commandLine().getOut()).run();
  }
}
