package io.leasehold.cli;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseEvent;
import io.leasehold.Subscription;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code leasehold watch NAME}: prints who holds a lease, then each change, one line each. */
@Command(
    name = "watch",
    mixinStandardHelpOptions = true,
    header = "Prints who holds a lease, then every change, one line each, until interrupted.",
    description = {
      "Observes lease NAME: the first line is its current state (CURRENT, with the holder and"
          + " fencing token, or free), then one line per change in the order the store made them:"
          + " ACQUIRED, RELEASED, EXPIRED, REVOKED, TAKEN_OVER, and GAP (changes were missed while"
          + " disconnected; the state was read again). Each line starts with the time this"
          + " process saw the event.",
      "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
          + Backends.DEV_URI,
      "Exits 0 when interrupted or after --count events, 1 if the backend cannot observe leases"
          + " or the first line (the lease's state) did not come within --timeout, 2 for bad"
          + " options."
    })
final class WatchCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Parameters(index = "0", paramLabel = "NAME", description = "The lease name.")
  private String name;

  @Option(names = "--backend", paramLabel = "URI", description = "The store's URI (default: see above).")
  private String backend;

  @Option(names = "--json", description = "Print each event as one JSON object per line.")
  private boolean json;

  @Option(
      names = "--count",
      paramLabel = "N",
      description = "Exit after N events (the first, CURRENT, included); 1 to 1000000. Default: run until interrupted.")
  private Integer count;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      defaultValue = "10s",
      description = "How long to wait for the first line, the lease's current state, 100ms to 1m"
          + " (default: ${DEFAULT-VALUE}). Later changes are waited for without a limit.")
  private Duration timeout;

  @Override
  @SuppressWarnings("try") // the Foreground is there for its shutdown hook, not used in the body
  public Integer call() throws InterruptedException {
    LeaseCommands.checkName(spec, name);
    LeaseCommands.checkTimeout(spec, timeout);
    Main.quietLibraryLogUnlessVerbose(); // the events are the output: no INFO lines among them
    if (count != null && (count < 1 || count > 1_000_000)) {
      throw new ParameterException(spec.commandLine(), "--count must be between 1 and 1000000; was " + count);
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    String uri = Backends.orDefault(backend);
    BlockingQueue<LeaseEvent> events = new LinkedBlockingQueue<>();
    try (LeaseBackend store = LeaseCommands.open(spec, uri, backend != null)) {
      Subscription subscription;
      try {
        subscription = store.observe(name, events::add);
      } catch (UnsupportedOperationException e) {
        return LeaseCommands.fail(err, "watch", e.getMessage());
      }
      // Ctrl-C and SIGTERM interrupt the wait for the next event: the end asked for, exit 0.
      try (Foreground stop = Foreground.interruptingThisThread()) {
        // Printed here, not on the backend's callback thread, so a slow terminal slows nobody.
        for (int printed = 0; count == null || printed < count; printed++) {
          LeaseEvent event =
              printed > 0 ? events.take() : events.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
          if (event == null) {
            // An unreachable store is retried quietly by the observer; a user would see nothing.
            return LeaseCommands.noAnswer(err, "watch", uri, timeout);
          }
          Instant seenAt = Instant.now().truncatedTo(ChronoUnit.MILLIS);
          out.println(json ? LeaseJson.event(seenAt, event) : seenAt + " " + event);
          out.flush();
        }
      } catch (InterruptedException stopped) {
        return 0;
      } finally {
        subscription.cancel();
      }
      return 0;
    }
  }
}
