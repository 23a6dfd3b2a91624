package io.leasehold.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * Injects faults into whichever contender leads at fixed fractions of the run: a pause (a
 * simulated stop-the-world GC stall) lasting {@code 2 × ttl}, later a network partition lasting
 * {@code 2 × ttl}, later a crash. Runs on its own daemon thread.
 */
final class FaultScript {

  enum Kind {
    PAUSE,
    PARTITION,
    CRASH;

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * A planned fault.
   *
   * @param kind what happens
   * @param at when, measured from the start of the demo
   */
  record Fault(Kind kind, Duration at) {}

  /**
   * The faults that fit into a run.
   *
   * @param faults the faults, in order
   * @param skipped the kinds that did not fit
   */
  record Plan(List<Fault> faults, List<Kind> skipped) {}

  /** Where each fault ideally starts, as a fraction of the run. */
  private static final double[] IDEAL_START = {0.15, 0.45, 0.75};

  private final Plan plan;
  private final List<DemoContender> contenders;
  private final Timeline timeline;
  private final DemoHistory history;
  private final Duration ttl;
  private final Duration length;
  private final long origin;
  private final Thread thread;
  private volatile boolean stopped;
  private volatile DemoContender paused;
  private volatile DemoContender partitioned;

  FaultScript(
      Plan plan,
      List<DemoContender> contenders,
      Timeline timeline,
      DemoHistory history,
      DemoConfig config,
      long origin) {
    this.plan = plan;
    this.contenders = contenders;
    this.timeline = timeline;
    this.history = history;
    this.ttl = config.ttl();
    this.length = config.faultLength();
    this.origin = origin;
    this.thread = new Thread(this::run, "demo-faults");
    this.thread.setDaemon(true);
  }

  /**
   * Plans the faults of a run: each at its ideal fraction of the run, or later if the one before
   * still lasts (plus {@code ttl / 4} to settle). A fault that would not end, and show the
   * recovery from it, before the run ends is skipped: a pause or partition needs
   * {@code 2.25 × ttl}, a crash {@code 1.5 × ttl} for another contender to take over.
   */
  static Plan plan(Duration duration, Duration ttl) {
    double t = ttl.toNanos();
    double end = duration.toNanos();
    double earliest = t / 2;
    List<Fault> faults = new ArrayList<>();
    List<Kind> skipped = new ArrayList<>();
    for (Kind kind : Kind.values()) {
      double start = Math.max(IDEAL_START[kind.ordinal()] * end, earliest);
      double busy = kind == Kind.CRASH ? 0 : 2 * t;
      double needs = kind == Kind.CRASH ? 1.5 * t : busy + t / 4;
      if (start + needs > end) {
        skipped.add(kind);
        continue;
      }
      faults.add(new Fault(kind, Duration.ofNanos((long) start)));
      earliest = start + busy + t / 4;
    }
    return new Plan(List.copyOf(faults), List.copyOf(skipped));
  }

  void start() {
    thread.start();
  }

  /** Stops the script and undoes what still applies: a frozen process resumes, a partition heals. */
  void stop(Duration maxWait) throws InterruptedException {
    stopped = true;
    LockSupport.unpark(thread);
    thread.join(Math.max(1, maxWait.toMillis()));
    DemoContender p = paused;
    if (p != null) {
      p.thaw();
    }
    DemoContender c = partitioned;
    if (c != null) {
      c.heal();
    }
  }

  private void run() {
    try {
      for (Fault fault : plan.faults()) {
        if (!Waiting.until(origin + fault.at().toNanos(), () -> stopped)) {
          return;
        }
        DemoContender leader = awaitLeader();
        if (leader == null) {
          timeline.fault(fault.kind().label() + " skipped: no contender leads right now");
          continue;
        }
        switch (fault.kind()) {
          case PAUSE -> pause(leader);
          case PARTITION -> partition(leader);
          case CRASH -> crash(leader);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void pause(DemoContender leader) throws InterruptedException {
    if (!leader.freezeAfterNextCheck(ttl)) {
      timeline.fault("pause skipped: " + leader.name() + " stopped leading before it froze");
      return;
    }
    paused = leader;
    history.fault("pause " + leader.name());
    timeline.fault(
        "pausing " + leader.name() + " for " + Durations.seconds(length)
            + " (simulated GC stall: the whole process freezes right after its checkAlive()"
            + " said true, before the write it guards)");
    Waiting.until(System.nanoTime() + length.toNanos(), () -> stopped);
    if (stopped) {
      return; // stop() thaws it
    }
    timeline.fault(
        leader.name() + " resumes after " + Durations.seconds(length)
            + " and goes on with the write it was about to make");
    leader.thaw();
    paused = null;
  }

  private void partition(DemoContender leader) {
    leader.cutOff();
    partitioned = leader;
    history.fault("partition " + leader.name());
    timeline.fault(
        "cutting " + leader.name() + " off from the store for " + Durations.seconds(length)
            + " (network partition: its requests are held back)");
    Waiting.until(System.nanoTime() + length.toNanos(), () -> stopped);
    if (stopped) {
      return; // stop() heals it
    }
    timeline.fault(
        "healing the partition: " + leader.name()
            + " reconnects, and its held-back requests arrive late");
    leader.heal();
    partitioned = null;
  }

  private void crash(DemoContender leader) {
    history.fault("crash " + leader.name());
    timeline.fault(
        "crashing " + leader.name()
            + " (the process dies without releasing; the store frees the lease after its TTL)");
    leader.crash();
  }

  /** The contender that leads now, waiting up to one TTL for one; {@code null} if none. */
  private DemoContender awaitLeader() {
    long deadline = System.nanoTime() + ttl.toNanos();
    long poll = ttl.toNanos() / 20;
    for (; ; ) {
      for (DemoContender c : contenders) {
        if (c.isLeading()) {
          return c;
        }
      }
      long now = System.nanoTime();
      if (stopped || now - deadline >= 0) {
        return null;
      }
      Waiting.until(Math.min(deadline, now + poll), () -> stopped);
    }
  }
}
