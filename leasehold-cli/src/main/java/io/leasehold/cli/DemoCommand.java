package io.leasehold.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code leasehold demo}: contenders for one lease on the in-memory store, under faults. */
@Command(
    name = "demo",
    header = "Shows leases at work under a pause, a partition and a crash, in real time.",
    description = {
      "Shows leases at work, in real time: contenders on one in-memory store, each its own"
          + " simulated process, run the leader-election pattern for one lease. A fault script"
          + " pauses the leader (a GC stall), later cuts the leader off from the store, later"
          + " crashes the leader. The timeline shows every acquisition, loss and stale write the"
          + " fencing token stopped; the summary checks that no two tenures overlapped.",
      "Exits 0 if the run was safe, 1 if not."
    })
final class DemoCommand implements Callable<Integer> {

  @Mixin private DemoOptions options;

  @Spec private CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    // The timeline says what happens, losses included; the engine's WARN lines about the same
    // losses (nine in a 15 s run) would only interleave with it in a terminal.
    Main.silenceLibraryLogUnlessVerbose();
    return new Demo(options.config(), spec.commandLine().getOut()).run();
  }
}
