package io.leasehold.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold faults check DIR}: the checker again, on the histories an earlier run left in
 * its directory — a run that ended without a report (its JVM was stopped, the machine rebooted),
 * or one to check again after the checker changed. Reads nothing but the directory.
 */
@Command(
    name = "check",
    mixinStandardHelpOptions = true,
    header = "Checks the histories an earlier run left in its directory again, without running anything.",
    description = {
      "Reads DIR's client histories (client-*.log), its nemesis.log and, when the run got that far, its final read of"
          + " the core (" + Harness.FINAL_READ + "), and applies the same checks as the run itself. Without the final read,"
          + " acknowledged writes are not checked, and the report says so. A client killed with the run has a last tenure"
          + " without an end: an incomplete history, reported as such.",
      "Exits 0 when there is no violation, 1 when there is one, 2 for bad options, a directory without histories or an"
          + " unreadable final read."
    })
final class CheckCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Parameters(paramLabel = "DIR", description = "The run's directory (printed by `leasehold faults` when it starts).")
  private Path dir;

  @Option(names = "--max-clock-drift", paramLabel = "FRACTION", defaultValue = "0.01",
      description = "The run's --max-clock-drift, 0 to 0.5 (default: ${DEFAULT-VALUE}, the run's default).")
  private double maxClockDrift;

  @Override
  public Integer call() throws IOException {
    if (!(maxClockDrift >= 0 && maxClockDrift <= 0.5)) {
      throw RunOptions.bad(spec, "--max-clock-drift must be between 0 and 0.5; was " + maxClockDrift);
    }
    if (!Files.isDirectory(dir)) {
      throw RunOptions.bad(spec, "DIR must be a run's directory; " + dir + " is not a directory");
    }
    List<Path> histories;
    try (Stream<Path> files = Files.list(dir)) {
      histories = files.filter(f -> f.getFileName().toString().matches("client-.+\\.log")).sorted().toList();
    }
    if (histories.isEmpty()) {
      throw RunOptions.bad(spec, dir + " holds no client histories (client-*.log): not a `leasehold faults` run's directory");
    }
    Path finalRead = dir.resolve(Harness.FINAL_READ);
    Checker.FinalState end;
    try {
      end = Files.exists(finalRead) ? Checker.FinalState.read(finalRead) : null;
    } catch (IOException e) {
      throw RunOptions.bad(spec, "cannot read the run's final read: " + e.getMessage());
    }
    History.Recorded recorded = History.read(histories, dir.resolve("nemesis.log"));
    Checker.Result result = Checker.check(recorded, end, new Checker.Bounds(maxClockDrift));
    if (end == null) {
      result = result.withoutFinalRead();
    }
    PrintWriter out = spec.commandLine().getOut();
    out.println("leasehold faults check: " + histories.size() + " client histories in " + dir.toAbsolutePath()
        + ", maxClockDrift " + maxClockDrift);
    if (end == null) {
      out.println("acknowledged writes: not checked (no " + Harness.FINAL_READ + ": the run ended before its final read of the core)");
    }
    out.print(Report.findings(result));
    out.flush();
    return result.violations() == 0 ? 0 : 1;
  }
}
