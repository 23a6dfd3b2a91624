package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.Bounds;
import io.leasehold.faults.Checker.FinalState;
import io.leasehold.faults.Checker.Register;
import io.leasehold.faults.Checker.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The checker, on hand-made histories: a clean one passes, and each kind of violation is caught. */
@Timeout(30)
class CheckerTest {

  private static final long MS = 1_000_000L;

  /** Two clients, three clean handovers, fenced writes inside their tenures, two acked keys. */
  static List<String> clean() {
    return new ArrayList<>(List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "WRITE c1 L 10 1 " + 10 * MS + " " + 12 * MS + " ACCEPTED 11",
        "END c1 L 10 " + 100 * MS + " released",
        "START c2 L 20 " + 90 * MS + " " + 110 * MS,
        "WRITE c2 L 20 1 " + 120 * MS + " " + 125 * MS + " ACCEPTED 21",
        "WRITE c2 L 20 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22",
        "END c2 L 20 " + 200 * MS + " lost:EXPIRED",
        "START c1 L 30 " + 150 * MS + " " + 400 * MS,
        "WRITE c1 L 30 2 " + 410 * MS + " " + 415 * MS + " ACCEPTED 31",
        "WRITE c2 L 20 3 " + 420 * MS + " " + 430 * MS + " REJECTED 30",
        "END c1 L 30 " + 500 * MS + " stopped",
        "KV c1 1 /faults/kv/c1/1 0 1 ACKED 5",
        "KV c2 1 /faults/kv/c2/1 0 1 ACKED 6",
        "KV c2 2 /faults/kv/c2/2 0 1 UNKNOWN StatusRuntimeException",
        "FAULT 1 PAUSE_HOLDER c2 " + 150 * MS + " " + 300 * MS));
  }

  static final FinalState END = state(Set.of("/faults/kv/c1/1", "/faults/kv/c2/1"), 31, 30);

  private static final Bounds BOUNDS = new Bounds(0.01);

  private static FinalState state(Set<String> keys, long revision, long token) {
    return new FinalState(keys, Map.of("L", new Register(revision, token)));
  }

  private static Result check(List<String> lines, FinalState end) {
    return Checker.check(History.parse(lines), end, BOUNDS);
  }

  @Test
  void aCleanHistoryHasNoViolationsAndItsCountsAreRight() {
    Result r = check(clean(), END);
    assertThat(r.violations()).isZero();
    assertThat(r.tenures()).isEqualTo(3);
    assertThat(r.handovers()).isEqualTo(2);
    assertThat(r.accepted()).isEqualTo(4);
    assertThat(r.rejected()).isEqualTo(1);
    assertThat(r.ackedKv()).isEqualTo(2);
    // PAUSE_HOLDER at 150 ms: c2 held until 200 ms, c1 started at 400 ms.
    assertThat(r.availability().get(FaultType.PAUSE_HOLDER).maxGapMillis()).isEqualTo(200.0);
  }

  @Test
  void overlappingTenuresAreReported() {
    List<String> h = clean();
    h.set(6, "END c2 L 20 " + 450 * MS + " lost:EXPIRED"); // c2 still alive after c1 started at 400
    Result r = check(h, END);
    assertThat(r.overlaps()).hasSize(1).first().asString().contains("c1 (token 30)", "c2 (token 20");
  }

  @Test
  void aTenureThatNoCheckAliveWitnessedOverlapsNothing() {
    List<String> h = clean();
    h.add(0, "START c3 L 25 " + 50 * MS + " " + 300 * MS);
    h.add(1, "END c3 L 25 -1 deadline");
    Result r = check(h, END);
    assertThat(r.overlaps()).isEmpty();
    assertThat(r.tokenRegressions()).isEmpty();
  }

  @Test
  void tokensGoingBackwardsAreReported() {
    List<String> h = clean();
    h.set(7, "START c1 L 15 " + 150 * MS + " " + 400 * MS); // acquired after token 20's acquire returned
    h.set(8, "WRITE c1 L 15 2 " + 410 * MS + " " + 415 * MS + " REJECTED 20");
    h.set(10, "END c1 L 15 " + 500 * MS + " stopped");
    Result r = check(h, state(END.keys(), 22, 20));
    assertThat(r.tokenRegressions()).hasSize(1).first().asString().contains("c1 got 15", "c2 had got 20");
  }

  @Test
  void aTokenGivenTwiceIsReported() {
    List<String> h = clean();
    h.set(3, "START c2 L 10 " + 90 * MS + " " + 110 * MS);
    h.set(4, "WRITE c2 L 10 1 " + 120 * MS + " " + 125 * MS + " ACCEPTED 21");
    h.set(5, "WRITE c2 L 10 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22");
    h.set(6, "END c2 L 10 " + 200 * MS + " lost:EXPIRED");
    h.set(9, "WRITE c2 L 10 3 " + 420 * MS + " " + 430 * MS + " REJECTED 30");
    assertThat(check(h, END).tokenRegressions()).anyMatch(s -> s.contains("token 10 was given to two tenures"));
  }

  @Test
  void aStaleWriteAcceptedAfterANewerTokenIsReported() {
    List<String> h = clean();
    h.set(9, "WRITE c2 L 20 3 " + 180 * MS + " " + 430 * MS + " ACCEPTED 32"); // token 20 after token 30 at 31
    Result r = check(h, state(END.keys(), 32, 20));
    assertThat(r.staleWrites()).hasSize(1).first().asString().contains("stale write accepted: c2 with token 20");
  }

  @Test
  void anAcceptedWriteDecidedAfterTheLastTrueCheckAliveIsReported() {
    List<String> h = clean();
    h.set(5, "WRITE c2 L 20 2 " + 250 * MS + " " + 255 * MS + " ACCEPTED 22"); // c2's lastAlive is 200 ms
    assertThat(check(h, END).staleWrites()).hasSize(1).first().asString().contains("50.0 ms outside its tenure");
  }

  @Test
  void anAcceptedWriteWithoutATenureIsReported() {
    List<String> h = clean();
    h.set(5, "WRITE c2 L 99 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22");
    assertThat(check(h, END).staleWrites()).anyMatch(s -> s.contains("belongs to no tenure"));
  }

  @Test
  void aLostAcknowledgedKeyIsReportedButAnUnacknowledgedOneIsNot() {
    Result r = check(clean(), state(Set.of("/faults/kv/c1/1"), 31, 30));
    assertThat(r.lostWrites()).containsExactly("acknowledged write lost: /faults/kv/c2/1 (revision 6, by c2)");
  }

  @Test
  void aRegisterOlderThanItsLastAcceptedWriteIsReported() {
    assertThat(check(clean(), state(END.keys(), 22, 20)).lostWrites())
        .hasSize(1).first().asString().contains("register lost its last accepted write");
  }

  @Test
  void anUnreadableEndIsAViolation() {
    assertThat(check(clean(), null).lostWrites()).hasSize(1);
  }

  @Test
  void aTenureWithoutEndIsAnIncompleteHistory() {
    List<String> h = clean();
    h.remove(10);
    assertThat(check(h, END).historyErrors()).hasSize(1).first().asString().contains("has no END");
  }

  @Test
  void tenuresOfDifferentLeasesMayOverlapButTenuresOfOneMayNot() {
    List<String> h = new ArrayList<>(List.of(
        "START c1 A 10 " + 0 * MS + " " + 5 * MS,
        "END c1 A 10 " + 100 * MS + " released",
        "START c2 B 11 " + 0 * MS + " " + 50 * MS,
        "END c2 B 11 " + 150 * MS + " released"));
    Result r = check(h, new FinalState(Set.of(), Map.of()));
    assertThat(r.violations()).isZero();
    assertThat(r.tenuresPerLease()).containsEntry("A", 1).containsEntry("B", 1);
    h.add("START c3 A 12 " + 20 * MS + " " + 60 * MS);
    h.add("END c3 A 12 " + 200 * MS + " released");
    assertThat(check(h, new FinalState(Set.of(), Map.of())).overlaps())
        .singleElement().asString().startsWith("A: c3 (token 12) started 40.0 ms before c1 (token 10");
  }

  @Test
  void tokensOnlyHaveToGrowWithinOneLease() {
    List<String> h = new ArrayList<>(List.of(
        "START c1 A 20 " + 0 * MS + " " + 5 * MS,
        "END c1 A 20 " + 100 * MS + " released",
        "START c2 B 7 " + 200 * MS + " " + 210 * MS,
        "END c2 B 7 " + 300 * MS + " released"));
    assertThat(check(h, new FinalState(Set.of(), Map.of())).tokenRegressions()).isEmpty();
    h.add("START c2 A 15 " + 400 * MS + " " + 410 * MS);
    h.add("END c2 A 15 " + 500 * MS + " released");
    assertThat(check(h, new FinalState(Set.of(), Map.of())).tokenRegressions())
        .singleElement().asString().isEqualTo("A: token went backwards: c2 got 15 after c1 had got 20");
  }

  @Test
  void eachLeaseHasItsOwnRegister() {
    List<String> h = new ArrayList<>(List.of(
        "START c1 A 20 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 A 20 " + 10 * MS,
        "WRITE c1 A 20 1 " + 10 * MS + " " + 12 * MS + " ACCEPTED 40",
        "END c1 A 20 " + 100 * MS + " released",
        "START c2 B 7 " + 0 * MS + " " + 5 * MS,
        "ALIVE c2 B 7 " + 10 * MS,
        "WRITE c2 B 7 1 " + 10 * MS + " " + 12 * MS + " ACCEPTED 41",
        "END c2 B 7 " + 100 * MS + " released"));
    // B's token 7 after A's 20 in revision order is not stale: they are different registers.
    Result ok = check(h, new FinalState(Set.of(), Map.of("A", new Register(40, 20), "B", new Register(41, 7))));
    assertThat(ok.violations()).isZero();
    Result lost = check(h, new FinalState(Set.of(), Map.of("A", new Register(40, 20))));
    assertThat(lost.lostWrites()).singleElement().asString().startsWith("B: register lost its last accepted write");
  }

  /** A holder killed with kill -9 writes no END: its tenure ends at the last ALIVE it flushed. */
  @Test
  void aKilledHoldersTenureEndsAtItsLastAlive() {
    List<String> h = new ArrayList<>(List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 10 * MS,
        "WRITE c1 L 10 1 " + 10 * MS + " " + 15 * MS + " ACCEPTED 11",
        "ALIVE c1 L 10 " + 110 * MS,
        "KILLED c1 " + 150 * MS,
        "START c2 L 20 " + 100 * MS + " " + 120 * MS,
        "END c2 L 20 " + 300 * MS + " released"));
    Result r = check(h, state(Set.of(), 11, 10));
    assertThat(r.historyErrors()).isEmpty();
    assertThat(r.overlaps()).isEmpty();
    assertThat(r.tenures()).isEqualTo(2);
    h.set(5, "START c2 L 20 " + 100 * MS + " " + 105 * MS); // began before c1's last ALIVE at 110 ms
    assertThat(check(h, state(Set.of(), 11, 10)).overlaps())
        .singleElement().asString().contains("c2 (token 20) started 5.0 ms before c1 (token 10, killed)");
  }

  @Test
  void aTenureOpenAtTheEndWithoutAKillIsStillIncomplete() {
    List<String> h = List.of("START c1 L 10 " + 0 * MS + " " + 5 * MS, "ALIVE c1 L 10 " + 10 * MS);
    assertThat(check(h, state(Set.of(), 0, -1)).historyErrors()).singleElement().asString().contains("has no END");
  }

  @Test
  void anAliveOutsideItsTenureIsAnIncompleteHistory() {
    List<String> h = List.of("ALIVE c1 L 10 " + 10 * MS);
    assertThat(check(h, state(Set.of(), 0, -1)).historyErrors()).singleElement().asString()
        .startsWith("ALIVE outside its tenure");
  }

  /** What findings 1 and 2 look like in a history: a live holder's record deleted, someone else in. */
  @Test
  void aSecondHolderAfterAnOperatorDeleteWhileTheFirstStillHoldsIsAnOverlap() {
    List<String> h = List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "FAULT 1 OPERATOR_DELETE L " + 50 * MS + " " + 1500 * MS + " holder=c1 silent=yes deleted=yes",
        "START c2 L 20 " + 60 * MS + " " + 80 * MS,
        "END c2 L 20 " + 900 * MS + " released",
        "END c1 L 10 " + 1700 * MS + " deadline");
    Result r = check(h, state(Set.of(), 0, -1));
    assertThat(r.overlaps()).singleElement().asString()
        .isEqualTo("L: c2 (token 20) started 1620.0 ms before c1 (token 10, deadline) last saw checkAlive() true");
    assertThat(r.availability()).containsKey(FaultType.OPERATOR_DELETE);
  }

  @Test
  void aClockSkewWithinMaxClockDriftIsInBounds() {
    List<String> h = clean();
    h.add("FAULT 2 CLOCK_SKEW c1 " + 10 * MS + " " + 20 * MS + " rate=0.990000 applied=yes");
    h.add("FAULT 3 CLOCK_SKEW n2 " + 30 * MS + " " + 40 * MS + " rate=1.010000 applied=yes");
    Result r = check(h, END);
    assertThat(r.violations()).isZero();
    assertThat(r.availability().get(FaultType.CLOCK_SKEW).faults()).isEqualTo(2);
  }

  /** A run beyond the drift bound proves nothing: it is not a pass, even without an overlap. */
  @Test
  void aClockSkewBeyondMaxClockDriftIsOutsideTheConfiguredBounds() {
    List<String> h = clean();
    h.add("FAULT 2 CLOCK_SKEW c1 " + 10 * MS + " " + 20 * MS + " rate=0.950000 applied=yes");
    Result r = check(h, END);
    assertThat(r.overlaps()).isEmpty();
    assertThat(r.outOfBounds()).singleElement().asString()
        .contains("c1's clock at rate 0.950000, beyond maxClockDrift 0.01");
    assertThat(r.violations()).isEqualTo(1);
  }

  /** A copy of an answered write that got another successful answer was applied twice. */
  @Test
  void aLateCopyAppliedAgainIsAViolation() {
    List<String> h = clean();
    h.add("FAULT 2 LATE_COPY c1 " + 10 * MS + " " + 20 * MS + " copies=9 same=5 too-late=2 reapplied=2 other=0 first-applied=0");
    h.add("FAULT 3 LATE_COPY c2 " + 30 * MS + " " + 40 * MS + " copies=4 same=3 too-late=0 reapplied=0 other=0 first-applied=1");
    Result r = check(h, END);
    assertThat(r.appliedTwice()).singleElement().asString()
        .startsWith("fault 2: 2 late copies of c1's answered writes were applied again");
    assertThat(r.violations()).isEqualTo(1);
    assertThat(Report.findings(r)).contains("writes applied twice");
  }

  @Test
  void aClockSkewThatDidNotTakeEffectIsReported() {
    List<String> h = clean();
    h.add("FAULT 2 CLOCK_SKEW c1 " + 10 * MS + " " + 20 * MS + " rate=0.990000 applied=no");
    assertThat(check(h, END).historyErrors()).singleElement().asString()
        .isEqualTo("fault 2: the clock skew of c1 did not take effect");
  }

  /** What finding 1 looks like without a second holder: a live holder's session expired by the store. */
  @Test
  void aLiveTenureTheStoreEndedBeforeTheHoldersDeadlineIsReported() {
    List<String> h = new ArrayList<>(List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 100 * MS + " " + 1900 * MS,
        "LOST c1 L 10 " + 400 * MS + " REVOKED",
        "END c1 L 10 " + 100 * MS + " lost:REVOKED"));
    Result r = check(h, state(Set.of(), 0, -1));
    assertThat(r.overlaps()).isEmpty();
    assertThat(r.earlyEnds()).singleElement().asString()
        .isEqualTo("L: c1's tenure (token 10) was lost as REVOKED 1500.0 ms before the holder's safe deadline,"
            + " and no operator deleted it: the store let go of a live holder");
    assertThat(r.violations()).isEqualTo(1);
  }

  @Test
  void anOperatorDeleteExplainsARevokedTenure() {
    List<String> h = List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 100 * MS + " " + 1900 * MS,
        "FAULT 1 OPERATOR_DELETE L " + 350 * MS + " " + 1000 * MS + " holder=c1 silent=no deleted=yes",
        "LOST c1 L 10 " + 400 * MS + " REVOKED",
        "END c1 L 10 " + 100 * MS + " lost:REVOKED");
    assertThat(check(h, state(Set.of(), 0, -1)).violations()).isZero();
  }

  @Test
  void theStoreMayEndATenureOnceTheHoldersDeadlineHasPassed() {
    List<String> h = List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 100 * MS + " " + 1900 * MS,
        "LOST c1 L 10 " + 2500 * MS + " REVOKED", // frozen past its deadline; the store let go after
        "END c1 L 10 " + 100 * MS + " lost:REVOKED",
        "START c2 L 11 " + 3000 * MS + " " + 3005 * MS,
        "ALIVE c2 L 11 " + 3100 * MS + " " + 4900 * MS,
        "LOST c2 L 11 " + 4905 * MS + " EXPIRED", // its own deadline, a timer tick late
        "END c2 L 11 " + 3100 * MS + " lost:EXPIRED");
    assertThat(check(h, state(Set.of(), 0, -1)).violations()).isZero();
  }

  /** The core reports its own expiry of a live session as EXPIRED: early is early, whatever the kind. */
  @Test
  void aSessionTheStoreExpiredBeforeTheHoldersDeadlineIsReportedWhateverTheKind() {
    List<String> h = List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 100 * MS + " " + 3100 * MS,
        "LOST c1 L 10 " + 400 * MS + " EXPIRED",
        "END c1 L 10 " + 100 * MS + " lost:EXPIRED");
    assertThat(check(h, state(Set.of(), 0, -1)).earlyEnds()).singleElement().asString()
        .startsWith("L: c1's tenure (token 10) was lost as EXPIRED 2700.0 ms before the holder's safe deadline");
  }

  /** A client clock running fast within the bound reaches its deadline a little before safeUntil. */
  @Test
  void aLossWithinTheDriftSlackOfTheDeadlineIsTheHoldersOwn() {
    List<String> h = List.of(
        "START c1 L 10 " + 0 * MS + " " + 5 * MS,
        "ALIVE c1 L 10 " + 100 * MS + " " + 3100 * MS,
        "LOST c1 L 10 " + 3050 * MS + " EXPIRED", // 50 ms early; slack 2 × 0.01 × 3000 + 10 = 70 ms
        "END c1 L 10 " + 100 * MS + " lost:EXPIRED");
    assertThat(check(h, state(Set.of(), 0, -1)).earlyEnds()).isEmpty();
  }
}
