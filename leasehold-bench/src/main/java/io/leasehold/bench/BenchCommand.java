package io.leasehold.bench;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * One workload as a command: checks the options, opens the target, measures, prints the table on
 * stdout and writes the JSON file. Exit status 0 when it ran, 1 when it could not run or a safety
 * figure (spurious losses, fencing-token regressions) is not 0, 2 for bad usage.
 */
abstract class BenchCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Mixin TargetOptions target;

  @Option(
      names = "--json",
      paramLabel = "FILE",
      description = "Write the results as JSON to FILE (default: target/bench/<workload>-<time>.json under the"
          + " current directory; the path is printed).")
  Path json;

  /** Checks the options; throws a {@link picocli.CommandLine.ParameterException} on a bad one. */
  abstract void validate();

  /** Runs the workload on {@code target}. */
  abstract Result measure(Target target) throws InterruptedException;

  @Override
  public Integer call() throws InterruptedException {
    validate();
    String targetProblem = target.problem();
    if (targetProblem != null) {
      throw Check.bad(spec, targetProblem);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String name = spec.name();
    Target t = openTarget(spec, target, err);
    if (t == null) {
      return 1;
    }
    Result result;
    try (t) {
      err.println("leasehold bench " + name + ": measuring " + t.describe());
      err.flush();
      result = measure(t);
      t.settings().ifPresent(result::storeSettings);
    } catch (RuntimeException e) {
      err.println("leasehold bench " + name + ": could not run: " + e);
      err.flush();
      return 1;
    }
    out.print(result.toTable());
    Path file = JsonFile.resolve(json, name);
    Map<String, Object> doc = new LinkedHashMap<>(result.toJson());
    JsonFile.write(file, doc);
    out.println("JSON: " + file);
    out.flush();
    return result.safetyViolated() ? 1 : 0;
  }

  /**
   * Opens the target; a URI no backend accepts is bad usage. {@return the target, or null after
   * printing why a cluster could not be started}
   */
  static Target openTarget(CommandSpec spec, TargetOptions target, PrintWriter err) {
    try {
      return target.open();
    } catch (IllegalArgumentException e) {
      if (target.backend() == null) {
        err.println("leasehold bench " + spec.name() + ": cannot start the cluster: " + e.getMessage());
        err.flush();
        return null;
      }
      throw Check.bad(spec, "--backend " + target.backend() + ": " + e.getMessage());
    } catch (RuntimeException e) {
      err.println("leasehold bench " + spec.name() + ": cannot open the store: " + e.getMessage());
      err.flush();
      return null;
    }
  }
}
