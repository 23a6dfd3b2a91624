package io.leasehold.cli;

import io.leasehold.LeaseSettings;
import io.leasehold.memory.MemoryStore;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The real-time demonstration behind {@code leasehold demo}: contenders for one lease on one
 * in-memory store, faults injected into whichever of them leads, a timeline printed as it
 * happens, and at the end a summary with a safety verdict computed from the tenures the holders
 * recorded.
 */
final class Demo {

  static final String LEASE_NAME = "demo-singleton";

  private final DemoConfig config;
  private final PrintWriter out;

  Demo(DemoConfig config, PrintWriter out) {
    this.config = config;
    this.out = out;
  }

  /**
   * Runs for the configured duration, stops every contender (the leader releases), closes every
   * connection, and prints the summary.
   *
   * @return 0 if no two tenures overlapped and tokens strictly increased, 1 otherwise
   */
  int run() throws InterruptedException {
    long origin = System.nanoTime();
    Timeline timeline = new Timeline(out, origin);
    DemoHistory history = new DemoHistory();
    FencedRegister register = new FencedRegister();
    MemoryStore store = MemoryStore.create();
    FaultScript.Plan plan = FaultScript.plan(config.duration(), config.ttl());

    List<DemoContender> contenders = new ArrayList<>();
    LeaseSettings settings = null;
    for (int i = 1; i <= config.contenders(); i++) {
      String owner = "node-" + i;
      // acquireRetries 0: the contender's own loop retries, with backoff and jitter.
      settings = LeaseSettings.builder(LEASE_NAME, owner).ttl(config.ttl()).acquireRetries(0).build();
      contenders.add(
          new DemoContender(
              owner,
              store.connect(),
              settings,
              config.workInterval(),
              register,
              timeline,
              history,
              config.seed() + i));
    }
    header(timeline, settings, plan);

    FaultScript faults = new FaultScript(plan, contenders, timeline, history, config, origin);
    Duration grace = config.ttl().multipliedBy(2);
    try {
      contenders.forEach(DemoContender::start);
      faults.start();
      Waiting.until(origin + config.duration().toNanos(), () -> false);
      timeline.fault(
          "time is up after " + Durations.format(config.duration())
              + ": stopping the contenders; the leader releases");
    } finally {
      faults.stop(grace);
      contenders.forEach(DemoContender::stop);
      for (DemoContender c : contenders) {
        c.close(grace);
      }
    }
    return summary(timeline, history, register);
  }

  private void header(Timeline timeline, LeaseSettings settings, FaultScript.Plan plan) {
    timeline.line(
        "Leasehold demo: " + config.contenders() + " contenders (node-1 to node-"
            + config.contenders() + ") for lease '" + LEASE_NAME + "' on one in-memory store");
    timeline.line(
        "ttl " + Durations.format(config.ttl()) + ": renewal every "
            + Durations.format(settings.heartbeatInterval()) + ", safe window "
            + Durations.format(settings.safeWindow()) + "; the leader writes to a fenced register"
            + " every " + Durations.format(config.workInterval()));
    String planned =
        plan.faults().stream()
            .map(f -> f.kind().label() + " at " + Durations.format(f.at()))
            .collect(Collectors.joining(", "));
    String skipped =
        plan.skipped().isEmpty()
            ? ""
            : "; " + plan.skipped().stream().map(FaultScript.Kind::label)
                    .collect(Collectors.joining(" and "))
                + " skipped: too little time (a --duration of "
                + Durations.format(config.ttl().multipliedBy(15).dividedBy(2))
                + " or more fits all three)";
    timeline.line(
        "faults, each on whichever contender leads then: " + (planned.isEmpty() ? "none" : planned)
            + skipped);
    timeline.line(
        "runs " + Durations.format(config.duration()) + "; backoff jitter seed " + config.seed());
    timeline.line("");
  }

  private int summary(Timeline timeline, DemoHistory history, FencedRegister register) {
    DemoHistory.Verdict verdict = history.verdict();
    List<String> faults = history.faults();
    timeline.line("");
    timeline.line("--- summary ---");
    timeline.line("tenures, each as its holder saw it (owner, token, start, end, how it ended):");
    for (TenureRecord t : history.tenures()) {
      timeline.line(
          String.format(
              Locale.ROOT,
              "  %-6s  token %-3d  %s -> %s  %-15s %4d writes",
              t.owner(),
              t.token(),
              timeline.at(t.start()),
              t.ended() ? timeline.at(t.end()) : "  open ",
              t.endedBy(),
              t.writes()));
    }
    timeline.line("handovers: " + verdict.handovers());
    timeline.line(
        "faults injected: " + faults.size()
            + (faults.isEmpty() ? "" : " (" + String.join(", ", faults) + ")"));
    timeline.line(
        "writes accepted: " + register.accepted()
            + (register.value() == null ? "" : " (the last one by " + register.value() + ")"));
    timeline.line("stale writes rejected: " + register.rejected());
    timeline.line("overlapping tenures: " + verdict.overlaps());
    timeline.line("tokens strictly increasing: " + (verdict.tokensIncreasing() ? "yes" : "no"));
    timeline.line(
        verdict.safe()
            ? "verdict: SAFE - no two holders held the lease at once, and every tenure had a"
                + " greater token than the one before"
            : "verdict: UNSAFE - see the tenures above");
    return verdict.safe() ? 0 : 1;
  }
}
