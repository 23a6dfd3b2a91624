package io.leasehold.faults;

import io.leasehold.faults.History.Fault;
import io.leasehold.faults.History.Kv;
import io.leasehold.faults.History.Outcome;
import io.leasehold.faults.History.Recorded;
import io.leasehold.faults.History.Tenure;
import io.leasehold.faults.History.Write;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Judges a run from its histories alone; a pure function, so it is tested with hand-made
 * histories that contain each kind of violation.
 *
 * <p>A tenure counts from {@code start} (acquire() returned true: the store granted it before
 * then) to {@code lastAlive} (a clock read taken just before a checkAlive() that said true: the
 * holder's local safe deadline was still ahead at that instant). Both ends are instants the holder
 * really held the lease by its own rule, so two tenures of one lease whose spans intersect mean two
 * holders acted at once. A tenure that no true checkAlive() witnessed has an empty span. Every rule
 * is judged per lease name: tokens only have to grow within one name, and each name has a register
 * of its own.
 */
final class Checker {

  private Checker() {}

  /**
   * One lease's fenced register after the run.
   *
   * @param revision its mod revision (0: absent)
   * @param token the token in its value (-1: absent)
   */
  record Register(long revision, long token) {}

  /**
   * What the core holds after the run, read linearizably once everything was healed.
   *
   * @param keys the keys under the KV prefix
   * @param registers each lease's register; a lease missing here has an absent register
   */
  record FinalState(Set<String> keys, Map<String, Register> registers) {
    FinalState {
      keys = Set.copyOf(keys);
      registers = Map.copyOf(registers);
    }

    Register register(String lease) {
      return registers.getOrDefault(lease, new Register(0, -1));
    }

    /**
     * Writes it to {@code file}, so that {@code leasehold faults check} can check the run again: a
     * line {@code key KEY} per key, {@code register LEASE REVISION TOKEN} per register (the run's
     * keys and lease names hold no spaces).
     */
    void write(Path file) throws IOException {
      List<String> lines = new ArrayList<>();
      new TreeSet<>(keys).forEach(k -> lines.add("key " + k));
      new TreeMap<>(registers).forEach((lease, r) -> lines.add("register " + lease + " " + r.revision() + " " + r.token()));
      Files.write(file, lines, StandardCharsets.UTF_8);
    }

    /** {@return the state {@link #write} wrote to {@code file}} @throws IOException unreadable or malformed */
    static FinalState read(Path file) throws IOException {
      Set<String> keys = new HashSet<>();
      Map<String, Register> registers = new HashMap<>();
      int n = 0;
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        n++;
        String[] f = line.split(" ");
        if (f.length == 2 && f[0].equals("key")) {
          keys.add(f[1]);
        } else if (f.length == 4 && f[0].equals("register")) {
          try {
            registers.put(f[1], new Register(Long.parseLong(f[2]), Long.parseLong(f[3])));
          } catch (NumberFormatException e) {
            throw new IOException(file + " line " + n + ": the revision and the token must be numbers: " + line);
          }
        } else if (!line.isBlank()) {
          throw new IOException(file + " line " + n + ": neither 'key KEY' nor 'register LEASE REVISION TOKEN': " + line);
        }
      }
      return new FinalState(keys, registers);
    }
  }

  /**
   * What the run promised to stay within; a run that left it proves nothing either way.
   *
   * @param maxClockDrift the clients' {@code maxClockDrift}: the largest clock-rate error (as a
   *     fraction) the leases are configured to tolerate
   */
  record Bounds(double maxClockDrift) {}

  /**
   * Availability after the faults of one type.
   *
   * @param faults how many were injected
   * @param measured how many (fault, lease) pairs were followed by a new tenure before the run ended
   * @param medianGapMillis median time a lease had no holder after a fault
   * @param maxGapMillis longest time a lease had no holder after a fault
   */
  record Availability(int faults, int measured, double medianGapMillis, double maxGapMillis) {}

  /**
   * The verdict.
   *
   * @param overlaps tenures of two holders of one lease that intersect
   * @param tokenRegressions tenures of one lease whose tokens do not grow with time
   * @param staleWrites accepted fenced writes from a stale holder or outside the writer's tenure
   * @param lostWrites acknowledged writes the core no longer has
   * @param earlyEnds tenures lost before the holder's local safe deadline without an operator's
   *     delete: the store let go of a live holder
   * @param historyErrors histories that are incomplete or unreadable, faults that did not take effect
   * @param outOfBounds faults beyond what the configuration tolerates (a clock skewed past
   *     maxClockDrift): the run is not a pass even without any other violation
   * @param appliedTwice late copies of a client's writes that the core applied again: a copy of
   *     an answered write got another successful answer than the original's
   * @param tenures how many tenures there were
   * @param handovers how many times the next tenure of a lease was another client's
   * @param tenuresPerLease tenures of each lease
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
      List<String> earlyEnds,
      List<String> historyErrors,
      List<String> outOfBounds,
      List<String> appliedTwice,
      int tenures,
      int handovers,
      Map<String, Integer> tenuresPerLease,
      long accepted,
      long rejected,
      long unknown,
      long ackedKv,
      Map<FaultType, Availability> availability) {

    /** {@return the number of violations of every kind} */
    int violations() {
      return overlaps.size() + tokenRegressions.size() + staleWrites.size() + lostWrites.size() + earlyEnds.size()
          + historyErrors.size() + outOfBounds.size() + appliedTwice.size();
    }

    /**
     * {@return this result without the lost-writes rule}, for a check of histories whose run left
     * no final read of the core: nothing acknowledged can be confirmed, and that is not a finding of
     * the histories.
     */
    Result withoutFinalRead() {
      return new Result(overlaps, tokenRegressions, staleWrites, List.of(), earlyEnds, historyErrors, outOfBounds, appliedTwice, tenures,
          handovers, tenuresPerLease, accepted, rejected, unknown, ackedKv, availability);
    }

    /** {@return how many faults of every type were injected} */
    int faults() {
      return availability.values().stream().mapToInt(Availability::faults).sum();
    }
  }

  /**
   * Checks a run.
   *
   * @param run what was recorded
   * @param end what the core held at the end, or null when it could not be read
   * @param bounds what the run's configuration tolerates
   * @return the verdict
   */
  static Result check(Recorded run, FinalState end, Bounds bounds) {
    Map<String, List<Tenure>> byLease = new TreeMap<>();
    for (Tenure t : run.tenures()) {
      byLease.computeIfAbsent(t.lease(), k -> new ArrayList<>()).add(t);
    }
    List<String> overlaps = new ArrayList<>();
    List<String> regressions = new ArrayList<>();
    int handovers = 0;
    Map<String, Integer> perLease = new LinkedHashMap<>();
    Map<String, List<Tenure>> sortedByLease = new TreeMap<>();
    for (Map.Entry<String, List<Tenure>> e : byLease.entrySet()) {
      List<Tenure> byStart = new ArrayList<>(e.getValue());
      byStart.sort(Comparator.comparingLong(Tenure::start));
      sortedByLease.put(e.getKey(), byStart);
      overlaps.addAll(overlaps(byStart));
      regressions.addAll(tokenRegressions(e.getValue()));
      handovers += handovers(byStart);
      perLease.put(e.getKey(), byStart.size());
    }
    List<String> errors = new ArrayList<>(run.errors());
    List<String> outOfBounds = new ArrayList<>();
    List<String> appliedTwice = new ArrayList<>();
    for (Fault f : run.faults()) {
      String reapplied = f.detail().get("reapplied");
      if (f.type() == FaultType.LATE_COPY && reapplied != null && !reapplied.equals("0")) {
        appliedTwice.add("fault " + f.id() + ": " + reapplied + " late copies of " + f.target()
            + "'s answered writes were applied again (another successful answer than the original's;"
            + " the nemesis log names each)");
      }
      if (f.type() != FaultType.CLOCK_SKEW) {
        continue;
      }
      if (!"yes".equals(f.detail().get("applied"))) {
        errors.add("fault " + f.id() + ": the clock skew of " + f.target() + " did not take effect");
      }
      String rate = f.detail().get("rate");
      double r = rate == null ? Double.NaN : Double.parseDouble(rate);
      if (!(Math.abs(r - 1) <= bounds.maxClockDrift() + 1e-9)) {
        outOfBounds.add(String.format(Locale.ROOT, "fault %d ran %s's clock at rate %s, beyond maxClockDrift %s:"
                + " the leases are not configured for that, so this run proves nothing either way",
            f.id(), f.target(), rate, bounds.maxClockDrift()));
      }
    }
    return new Result(
        overlaps,
        regressions,
        staleWrites(run.writes(), run.tenures()),
        lostWrites(run, end),
        earlyEnds(run, bounds.maxClockDrift()),
        errors,
        outOfBounds,
        appliedTwice,
        run.tenures().size(),
        handovers,
        perLease,
        run.writes().stream().filter(w -> w.outcome() == Outcome.ACCEPTED).count(),
        run.writes().stream().filter(w -> w.outcome() == Outcome.REJECTED).count(),
        run.writes().stream().filter(w -> w.outcome() == Outcome.UNKNOWN).count(),
        run.kvs().stream().filter(Kv::acked).count(),
        availability(run.faults(), sortedByLease));
  }

  /** Rule 1, for one lease: sweep by start; a start before the latest lastAlive so far is an overlap. */
  static List<String> overlaps(List<Tenure> byStart) {
    List<String> found = new ArrayList<>();
    Tenure reaching = null;
    for (Tenure t : byStart) {
      if (!t.witnessed()) {
        continue;
      }
      if (reaching != null && t.start() < reaching.lastAlive()) {
        found.add(String.format(Locale.ROOT,
            "%s: %s (token %d) started %.1f ms before %s (token %d, %s) last saw checkAlive() true",
            t.lease(), t.client(), t.token(), (reaching.lastAlive() - t.start()) / 1e6, reaching.client(),
            reaching.token(), reaching.reason()));
      }
      if (reaching == null || t.lastAlive() > reaching.lastAlive()) {
        reaching = t;
      }
    }
    return found;
  }

  /**
   * Rule 2, for one lease: a tenure whose acquire() returned before another's was called must carry
   * the smaller token; and no token belongs to two tenures.
   */
  static List<String> tokenRegressions(List<Tenure> tenures) {
    List<String> found = new ArrayList<>();
    Map<Long, Tenure> byToken = new HashMap<>();
    for (Tenure t : tenures) {
      Tenure other = byToken.putIfAbsent(t.token(), t);
      if (other != null) {
        found.add(t.lease() + ": token " + t.token() + " was given to two tenures (" + other.client() + ", " + t.client()
            + ")");
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
        found.add(b.lease() + ": token went backwards: " + b.client() + " got " + b.token() + " after " + highest.client()
            + " had got " + highest.token());
      }
    }
    return found;
  }

  /**
   * Rule 3: per lease, accepted writes in revision order carry tokens that never go down, and each
   * lies inside its writer's tenure (decided between its start and its last true checkAlive()).
   */
  static List<String> staleWrites(List<Write> writes, List<Tenure> tenures) {
    List<String> found = new ArrayList<>();
    Map<String, List<Write>> byLease = new TreeMap<>();
    for (Write w : writes) {
      if (w.outcome() == Outcome.ACCEPTED) {
        byLease.computeIfAbsent(w.lease(), k -> new ArrayList<>()).add(w);
      }
    }
    Map<String, Tenure> tenureOf = new HashMap<>();
    for (Tenure t : tenures) {
      tenureOf.put(t.client() + "/" + t.lease() + "/" + t.token(), t);
    }
    for (List<Write> accepted : byLease.values()) {
      accepted.sort(Comparator.comparingLong(Write::value));
      Write previous = null;
      for (Write w : accepted) {
        if (previous != null && w.value() == previous.value()) {
          found.add(w.lease() + ": two writes accepted at revision " + w.value() + ": " + previous.client() + "#"
              + previous.seq() + " and " + w.client() + "#" + w.seq());
        }
        if (previous != null && w.token() < previous.token()) {
          found.add(w.lease() + ": stale write accepted: " + w.client() + " with token " + w.token() + " at revision "
              + w.value() + ", after " + previous.client() + " had written token " + previous.token());
        }
        previous = w;
      }
      for (Write w : accepted) {
        Tenure t = tenureOf.get(w.client() + "/" + w.lease() + "/" + w.token());
        if (t == null) {
          found.add(w.lease() + ": accepted write " + w.client() + "#" + w.seq() + " with token " + w.token()
              + " belongs to no tenure of " + w.client());
        } else if (w.attempt() < t.start() || w.attempt() > t.lastAlive()) {
          found.add(String.format(Locale.ROOT, "%s: accepted write %s#%d (token %d) was decided %.1f ms outside its tenure",
              w.lease(), w.client(), w.seq(), w.token(),
              (w.attempt() < t.start() ? t.start() - w.attempt() : w.attempt() - t.lastAlive()) / 1e6));
        }
      }
    }
    return found;
  }

  /** Rule 4: every acknowledged key is there, and each register is no older than its last accepted write. */
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
    Map<String, Write> last = new TreeMap<>();
    for (Write w : run.writes()) {
      if (w.outcome() == Outcome.ACCEPTED) {
        last.merge(w.lease(), w, (a, b) -> a.value() >= b.value() ? a : b);
      }
    }
    for (Write w : last.values()) {
      Register r = end.register(w.lease());
      if (r.revision() < w.value() || r.token() < w.token()) {
        found.add(w.lease() + ": register lost its last accepted write: it is at revision " + r.revision() + " token "
            + r.token() + ", but " + w.client() + "#" + w.seq() + " was accepted at revision " + w.value()
            + " with token " + w.token());
      }
    }
    return found;
  }

  /** How long before a tenure's acquire an operator's delete may still have been on its way. */
  private static final long DELETE_IN_FLIGHT_NANOS = 10_000_000_000L;

  /** A loss this close to the holder's deadline is the holder's own (timer resolution). */
  private static final long EARLY_SLACK_NANOS = 10_000_000L;

  /**
   * Rule 6: a tenure ends (the holder's {@code onLost} runs) no earlier than the holder's own
   * local safe deadline, unless an operator deleted the lease. The holder computes its deadline
   * from the send time of its last confirmed renewal and the store must measure expiry from when
   * it received it, so a loss reported before that deadline — {@code REVOKED}, {@code TAKEN_OVER},
   * or {@code EXPIRED} because the store expired the session (the core reports its own expiry of a
   * session that way) — means the store let go of a live holder, even when the holder heard of it
   * fast enough that no second holder overlapped this time. A loss by the holder's own deadline
   * comes at or after {@code safeUntil}; the slack covers a client clock that runs fast within the
   * drift bound ({@code safeUntil} reads the skewed {@code remaining()} as real time) and the
   * timer's resolution.
   */
  static List<String> earlyEnds(Recorded run, double maxClockDrift) {
    List<String> found = new ArrayList<>();
    Map<String, Tenure> byKey = new HashMap<>();
    for (Tenure t : run.tenures()) {
      byKey.put(t.client() + "/" + t.lease() + "/" + t.token(), t);
    }
    for (History.Loss l : run.losses()) {
      Tenure t = byKey.get(l.client() + "/" + l.lease() + "/" + l.token());
      if (t == null || t.safeUntil() < 0 || t.lastAlive() < 0) {
        continue; // nothing known of its deadline
      }
      long slack = (long) (2 * maxClockDrift * (t.safeUntil() - t.lastAlive())) + EARLY_SLACK_NANOS;
      if (t.safeUntil() - l.at() <= slack) {
        continue; // the deadline had passed (or was as good as passed): the store may let go
      }
      boolean deleted = run.faults().stream().anyMatch(f -> f.type() == FaultType.OPERATOR_DELETE
          && f.target().equals(l.lease()) && f.start() - (t.call() - DELETE_IN_FLIGHT_NANOS) >= 0 && f.start() - l.at() <= 0);
      if (!deleted) {
        found.add(String.format(Locale.ROOT,
            "%s: %s's tenure (token %d) was lost as %s %.1f ms before the holder's safe deadline, and no operator"
                + " deleted it: the store let go of a live holder", l.lease(), l.client(), l.token(), l.kind(),
            (t.safeUntil() - l.at()) / 1e6));
      }
    }
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
   * Rule 5: after each fault, for each lease, the first moment nobody holds it (the fault's start,
   * or the end of the tenure running then) to the next tenure's start.
   */
  static Map<FaultType, Availability> availability(List<Fault> faults, Map<String, List<Tenure>> byLease) {
    Map<String, List<long[]>> heldByLease = new TreeMap<>();
    for (Map.Entry<String, List<Tenure>> e : byLease.entrySet()) {
      List<long[]> held = new ArrayList<>(); // merged [start, lastAlive] spans
      for (Tenure t : e.getValue()) {
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
      heldByLease.put(e.getKey(), held);
    }
    Map<FaultType, List<Double>> gaps = new EnumMap<>(FaultType.class);
    Map<FaultType, Integer> counts = new EnumMap<>(FaultType.class);
    for (Fault f : faults) {
      counts.merge(f.type(), 1, Integer::sum);
      for (List<long[]> held : heldByLease.values()) {
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
    }
    Map<FaultType, Availability> result = new EnumMap<>(FaultType.class);
    for (Map.Entry<FaultType, Integer> e : counts.entrySet()) {
      List<Double> sorted = gaps.getOrDefault(e.getKey(), List.of()).stream().sorted().toList();
      int n = sorted.size();
      double median = n == 0 ? Double.NaN : (sorted.get((n - 1) / 2) + sorted.get(n / 2)) / 2;
      double max = n == 0 ? Double.NaN : sorted.get(n - 1);
      result.put(e.getKey(), new Availability(e.getValue(), n, median, max));
    }
    return result;
  }
}
