package io.leasehold.faults;

import io.leasehold.faults.History.Fault;
import io.leasehold.faults.History.Kv;
import io.leasehold.faults.History.Outcome;
import io.leasehold.faults.History.Recorded;
import io.leasehold.faults.History.Tenure;
import io.leasehold.faults.History.Write;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Judges a run from its histories alone; a pure function, so it is tested with hand-made
 * histories that contain each kind of violation.
 *
 * <p>A tenure counts from {@code start} (acquire() returned true: the store granted it before
 * then) to {@code lastAlive} (a clock read taken just before a checkAlive() that said true: the
 * holder's local safe deadline was still ahead at that instant). Both ends are instants the holder
 * really held the lease by its own rule, so two tenures whose spans intersect mean two holders acted
 * at once. A tenure that no true checkAlive() witnessed has an empty span.
 */
final class Checker {

  private Checker() {}

  /**
   * What the core holds after the run, read linearizably once everything was healed.
   *
   * @param keys the keys under the KV prefix
   * @param registerRevision the register's mod revision (0: absent)
   * @param registerToken the token in the register's value (-1: absent)
   */
  record FinalState(Set<String> keys, long registerRevision, long registerToken) {}

  /**
   * Availability after the faults of one type.
   *
   * @param faults how many were injected
   * @param measured how many were followed by a new tenure before the run ended
   * @param medianGapMillis median time without a holder after a fault
   * @param maxGapMillis longest time without a holder after a fault
   */
  record Availability(int faults, int measured, double medianGapMillis, double maxGapMillis) {}

  /**
   * The verdict.
   *
   * @param overlaps tenures of two holders that intersect
   * @param tokenRegressions tenures whose tokens do not grow with time
   * @param staleWrites accepted fenced writes from a stale holder or outside the writer's tenure
   * @param lostWrites acknowledged writes the core no longer has
   * @param historyErrors histories that are incomplete or unreadable
   * @param tenures how many tenures there were
   * @param handovers how many times the next tenure was another client's
   * @param accepted fenced writes accepted
   * @param rejected fenced writes the register turned away
   * @param unknown fenced writes without an answer
   * @param ackedKv acknowledged KV writes
   * @param availability per fault type
   */
  record Result(
      List<String> overlaps,
      List<String> tokenRegressions,
      List<String> staleWrites,
      List<String> lostWrites,
      List<String> historyErrors,
      int tenures,
      int handovers,
      long accepted,
      long rejected,
      long unknown,
      long ackedKv,
      Map<FaultType, Availability> availability) {

    /** {@return the number of violations of every kind} */
    int violations() {
      return overlaps.size() + tokenRegressions.size() + staleWrites.size() + lostWrites.size() + historyErrors.size();
    }
  }

  /**
   * Checks a run.
   *
   * @param run what was recorded
   * @param end what the core held at the end, or null when it could not be read
   * @return the verdict
   */
  static Result check(Recorded run, FinalState end) {
    List<Tenure> byStart = new ArrayList<>(run.tenures());
    byStart.sort(Comparator.comparingLong(Tenure::start));
    return new Result(
        overlaps(byStart),
        tokenRegressions(run.tenures()),
        staleWrites(run.writes(), run.tenures()),
        lostWrites(run, end),
        List.copyOf(run.errors()),
        byStart.size(),
        handovers(byStart),
        run.writes().stream().filter(w -> w.outcome() == Outcome.ACCEPTED).count(),
        run.writes().stream().filter(w -> w.outcome() == Outcome.REJECTED).count(),
        run.writes().stream().filter(w -> w.outcome() == Outcome.UNKNOWN).count(),
        run.kvs().stream().filter(Kv::acked).count(),
        availability(run.faults(), byStart));
  }

  /** Rule 1: sweep by start; a start before the latest lastAlive so far is an overlap. */
  static List<String> overlaps(List<Tenure> byStart) {
    List<String> found = new ArrayList<>();
    Tenure reaching = null;
    for (Tenure t : byStart) {
      if (!t.witnessed()) {
        continue;
      }
      if (reaching != null && t.start() < reaching.lastAlive()) {
        found.add(String.format("%s (token %d) started %.1f ms before %s (token %d) last saw checkAlive() true",
            t.client(), t.token(), (reaching.lastAlive() - t.start()) / 1e6, reaching.client(), reaching.token()));
      }
      if (reaching == null || t.lastAlive() > reaching.lastAlive()) {
        reaching = t;
      }
    }
    return found;
  }

  /**
   * Rule 2: a tenure whose acquire() returned before another's was called must carry the smaller
   * token; and no token belongs to two tenures.
   */
  static List<String> tokenRegressions(List<Tenure> tenures) {
    List<String> found = new ArrayList<>();
    Map<Long, Tenure> byToken = new HashMap<>();
    for (Tenure t : tenures) {
      Tenure other = byToken.putIfAbsent(t.token(), t);
      if (other != null) {
        found.add("token " + t.token() + " was given to two tenures (" + other.client() + ", " + t.client() + ")");
      }
    }
    List<Tenure> byCall = new ArrayList<>(tenures);
    byCall.sort(Comparator.comparingLong(Tenure::call));
    List<Tenure> byAcquired = new ArrayList<>(tenures);
    byAcquired.sort(Comparator.comparingLong(Tenure::start));
    int next = 0;
    Tenure highest = null;
    for (Tenure b : byCall) {
      while (next < byAcquired.size() && byAcquired.get(next).start() < b.call()) {
        Tenure a = byAcquired.get(next++);
        if (highest == null || a.token() > highest.token()) {
          highest = a;
        }
      }
      if (highest != null && highest.token() >= b.token()) {
        found.add("token went backwards: " + b.client() + " got " + b.token() + " after " + highest.client()
            + " had got " + highest.token());
      }
    }
    return found;
  }

  /**
   * Rule 3: accepted writes in revision order carry tokens that never go down, and each lies
   * inside its writer's tenure (decided between its start and its last true checkAlive()).
   */
  static List<String> staleWrites(List<Write> writes, List<Tenure> tenures) {
    List<String> found = new ArrayList<>();
    List<Write> accepted = new ArrayList<>(writes.stream().filter(w -> w.outcome() == Outcome.ACCEPTED).toList());
    accepted.sort(Comparator.comparingLong(Write::value));
    Write previous = null;
    for (Write w : accepted) {
      if (previous != null && w.value() == previous.value()) {
        found.add("two writes accepted at revision " + w.value() + ": " + previous.client() + "#" + previous.seq()
            + " and " + w.client() + "#" + w.seq());
      }
      if (previous != null && w.token() < previous.token()) {
        found.add("stale write accepted: " + w.client() + " with token " + w.token() + " at revision " + w.value()
            + ", after " + previous.client() + " had written token " + previous.token());
      }
      previous = w;
    }
    Map<String, Tenure> tenureOf = new HashMap<>();
    for (Tenure t : tenures) {
      tenureOf.put(t.client() + "/" + t.token(), t);
    }
    for (Write w : accepted) {
      Tenure t = tenureOf.get(w.client() + "/" + w.token());
      if (t == null) {
        found.add("accepted write " + w.client() + "#" + w.seq() + " with token " + w.token() + " belongs to no tenure of "
            + w.client());
      } else if (w.attempt() < t.start() || w.attempt() > t.lastAlive()) {
        found.add(String.format("accepted write %s#%d (token %d) was decided %.1f ms outside its tenure",
            w.client(), w.seq(), w.token(),
            (w.attempt() < t.start() ? t.start() - w.attempt() : w.attempt() - t.lastAlive()) / 1e6));
      }
    }
    return found;
  }

  /** Rule 4: every acknowledged key is there, and the register is no older than its last accepted write. */
  static List<String> lostWrites(Recorded run, FinalState end) {
    List<String> found = new ArrayList<>();
    if (end == null) {
      found.add("the core could not be read after the run: nothing acknowledged can be confirmed");
      return found;
    }
    for (Kv kv : run.kvs()) {
      if (kv.acked() && !end.keys().contains(kv.key())) {
        found.add("acknowledged write lost: " + kv.key() + " (revision " + kv.revision() + ", by " + kv.client() + ")");
      }
    }
    run.writes().stream()
        .filter(w -> w.outcome() == Outcome.ACCEPTED)
        .max(Comparator.comparingLong(Write::value))
        .ifPresent(last -> {
          if (end.registerRevision() < last.value() || end.registerToken() < last.token()) {
            found.add("register lost its last accepted write: it is at revision " + end.registerRevision()
                + " token " + end.registerToken() + ", but " + last.client() + "#" + last.seq()
                + " was accepted at revision " + last.value() + " with token " + last.token());
          }
        });
    return found;
  }

  /** The number of times the next tenure (by start) belongs to another client. */
  static int handovers(List<Tenure> byStart) {
    int n = 0;
    for (int i = 1; i < byStart.size(); i++) {
      if (!byStart.get(i).client().equals(byStart.get(i - 1).client())) {
        n++;
      }
    }
    return n;
  }

  /**
   * Rule 5: after each fault, the first moment nobody holds the lease (the fault's start, or the
   * end of the tenure running then) to the next tenure's start.
   */
  static Map<FaultType, Availability> availability(List<Fault> faults, List<Tenure> byStart) {
    List<long[]> held = new ArrayList<>(); // merged [start, lastAlive] spans
    for (Tenure t : byStart) {
      if (!t.witnessed()) {
        continue;
      }
      long[] last = held.isEmpty() ? null : held.get(held.size() - 1);
      if (last != null && t.start() <= last[1]) {
        last[1] = Math.max(last[1], t.lastAlive());
      } else {
        held.add(new long[] {t.start(), t.lastAlive()});
      }
    }
    Map<FaultType, List<Double>> gaps = new EnumMap<>(FaultType.class);
    Map<FaultType, Integer> counts = new EnumMap<>(FaultType.class);
    for (Fault f : faults) {
      counts.merge(f.type(), 1, Integer::sum);
      long gapStart = f.start();
      Long nextStart = null;
      for (long[] span : held) {
        if (span[1] < gapStart) {
          continue;
        }
        if (span[0] <= gapStart) {
          gapStart = span[1]; // held when the fault began: the gap opens when that ends
          continue;
        }
        nextStart = span[0];
        break;
      }
      if (nextStart != null) {
        gaps.computeIfAbsent(f.type(), k -> new ArrayList<>()).add((nextStart - gapStart) / 1e6);
      }
    }
    Map<FaultType, Availability> result = new EnumMap<>(FaultType.class);
    for (Map.Entry<FaultType, Integer> e : counts.entrySet()) {
      List<Double> g = gaps.getOrDefault(e.getKey(), List.of());
      List<Double> sorted = g.stream().sorted().toList();
      int n = sorted.size();
      double median = n == 0 ? Double.NaN : (sorted.get((n - 1) / 2) + sorted.get(n / 2)) / 2;
      double max = sorted.isEmpty() ? Double.NaN : sorted.get(sorted.size() - 1);
      result.put(e.getKey(), new Availability(e.getValue(), sorted.size(), median, max));
    }
    return result;
  }
}
