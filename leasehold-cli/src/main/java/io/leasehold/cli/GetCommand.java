package io.leasehold.cli;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseState;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code leasehold get NAME}: who holds a lease, with which token, and the keys attached to it. */
@Command(
    name = "get",
    mixinStandardHelpOptions = true,
    header = "Shows who holds a lease, its fencing token and the keys attached to the tenure.",
    description = {
      "Reads lease NAME as the store holds it now (a linearizable read on the core) and prints its"
          + " holder (owner#incarnation), fencing token and attached keys, or that it is free.",
      "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
          + Backends.DEV_URI,
      "Exits 0 when the store answered (held or free), 1 if it did not answer in time or the"
          + " backend cannot read lease states, 2 for bad options."
    })
final class GetCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Parameters(index = "0", paramLabel = "NAME", description = "The lease name.")
  private String name;

  @Option(names = "--backend", paramLabel = "URI", description = "The store's URI (default: see above).")
  private String backend;

  @Option(names = "--json", description = "Print one JSON object instead of text.")
  private boolean json;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      defaultValue = "10s",
      description = "How long to wait for the answer, 100ms to 1m (default: ${DEFAULT-VALUE}).")
  private Duration timeout;

  @Override
  public Integer call() throws InterruptedException {
    LeaseCommands.checkName(spec, name);
    LeaseCommands.checkTimeout(spec, timeout);
    Main.quietLibraryLogUnlessVerbose(); // the answer is the output: no INFO lines around it
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String uri = Backends.orDefault(backend);
    try (LeaseBackend store = LeaseCommands.open(spec, uri, backend != null)) {
      LeaseState state = store.read(name).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (json) {
        out.println(LeaseJson.state(state));
      } else {
        print(out, state);
      }
      out.flush();
      return 0;
    } catch (UnsupportedOperationException e) {
      return LeaseCommands.fail(err, "get", e.getMessage());
    } catch (TimeoutException e) {
      return LeaseCommands.noAnswer(err, "get", uri, timeout);
    } catch (ExecutionException | CompletionException e) {
      return LeaseCommands.storeFailed(err, "get", uri, e);
    }
  }

  private static void print(PrintWriter out, LeaseState state) {
    if (state.holding().isEmpty()) {
      out.println("lease '" + state.name() + "' is free");
      return;
    }
    var h = state.holding().get();
    out.println(
        "lease '" + state.name() + "' is held by " + h.holder() + " with token " + h.token()
            + h.since().map(s -> " since " + s).orElse(""));
    if (state.attached().isEmpty()) {
      out.println("  no attached keys");
    }
    for (Map.Entry<String, String> e : state.attached().entrySet()) {
      out.println("  " + e.getKey() + " = " + e.getValue());
    }
  }
}
