package io.leasehold.cli;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What happened during the demo, for the summary and the safety verdict: every tenure each holder
 * recorded, and the faults injected. Thread-safe.
 */
final class DemoHistory {

  /**
   * The safety verdict over the recorded tenures.
   *
   * @param overlaps tenures that began before an earlier tenure had ended
   * @param tokensIncreasing whether each tenure's token exceeds the token of every earlier one
   * @param handovers how often the lease passed to a different owner
   */
  record Verdict(int overlaps, boolean tokensIncreasing, int handovers) {
    boolean safe() {
      return overlaps == 0 && tokensIncreasing;
    }
  }

  private final List<TenureRecord> tenures = new CopyOnWriteArrayList<>();
  private final List<String> faults = new CopyOnWriteArrayList<>();

  /** Records a tenure that began at {@code start}. */
  TenureRecord begin(String owner, long token, long start) {
    TenureRecord t = new TenureRecord(owner, token, start);
    tenures.add(t);
    return t;
  }

  /** Records an injected fault, such as {@code "pause node-1"}. */
  void fault(String description) {
    faults.add(description);
  }

  List<String> faults() {
    return List.copyOf(faults);
  }

  /** {@return the tenures in the order they began} */
  List<TenureRecord> tenures() {
    List<TenureRecord> sorted = new ArrayList<>(tenures);
    sorted.sort(Comparator.comparingLong(TenureRecord::start));
    return sorted;
  }

  /**
   * Checks the tenures in the order they began: none may begin before every earlier one ended
   * (a tenure that never ended overlaps everything after it), and tokens must strictly grow.
   */
  Verdict verdict() {
    int overlaps = 0;
    int handovers = 0;
    boolean increasing = true;
    TenureRecord previous = null;
    boolean someEarlierOpen = false;
    boolean someEarlierEnded = false;
    long latestEnd = 0;
    for (TenureRecord t : tenures()) {
      if (previous != null) {
        if (someEarlierOpen || (someEarlierEnded && t.start() - latestEnd < 0)) {
          overlaps++;
        }
        if (t.token() <= previous.token()) {
          increasing = false;
        }
        if (!t.owner().equals(previous.owner())) {
          handovers++;
        }
      }
      if (!t.ended()) {
        someEarlierOpen = true;
      } else if (!someEarlierEnded || t.end() - latestEnd > 0) {
        latestEnd = t.end();
        someEarlierEnded = true;
      }
      previous = t;
    }
    return new Verdict(overlaps, increasing, handovers);
  }
}
