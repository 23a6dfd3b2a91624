package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.faults.Checker.FinalState;
import io.leasehold.faults.Checker.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The checker, on hand-made histories: a clean one passes, and each kind of violation is caught. */
@Timeout(30)
class CheckerTest {

  private static final long MS = 1_000_000L;

  /** Two clients, three clean handovers, fenced writes inside their tenures, two acked keys. */
  private static List<String> clean() {
    return new ArrayList<>(List.of(
        "START c1 10 " + 0 * MS + " " + 5 * MS,
        "WRITE c1 10 1 " + 10 * MS + " " + 12 * MS + " ACCEPTED 11",
        "END c1 10 " + 100 * MS + " released",
        "START c2 20 " + 90 * MS + " " + 110 * MS,
        "WRITE c2 20 1 " + 120 * MS + " " + 125 * MS + " ACCEPTED 21",
        "WRITE c2 20 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22",
        "END c2 20 " + 200 * MS + " lost:EXPIRED",
        "START c1 30 " + 150 * MS + " " + 400 * MS,
        "WRITE c1 30 2 " + 410 * MS + " " + 415 * MS + " ACCEPTED 31",
        "WRITE c2 20 3 " + 420 * MS + " " + 430 * MS + " REJECTED 30",
        "END c1 30 " + 500 * MS + " stopped",
        "KV c1 1 /faults/kv/c1/1 0 1 ACKED 5",
        "KV c2 1 /faults/kv/c2/1 0 1 ACKED 6",
        "KV c2 2 /faults/kv/c2/2 0 1 UNKNOWN StatusRuntimeException",
        "FAULT 1 PAUSE_HOLDER c2 " + 150 * MS + " " + 300 * MS));
  }

  private static final FinalState END = new FinalState(Set.of("/faults/kv/c1/1", "/faults/kv/c2/1"), 31, 30);

  private static Result check(List<String> lines, FinalState end) {
    return Checker.check(History.parse(lines), end);
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
    h.set(6, "END c2 20 " + 450 * MS + " lost:EXPIRED"); // c2 still alive after c1 started at 400
    Result r = check(h, END);
    assertThat(r.overlaps()).hasSize(1).first().asString().contains("c1 (token 30)", "c2 (token 20)");
  }

  @Test
  void aTenureThatNoCheckAliveWitnessedOverlapsNothing() {
    List<String> h = clean();
    h.add(0, "START c3 25 " + 50 * MS + " " + 300 * MS);
    h.add(1, "END c3 25 -1 deadline");
    Result r = check(h, END);
    assertThat(r.overlaps()).isEmpty();
    assertThat(r.tokenRegressions()).isEmpty();
  }

  @Test
  void tokensGoingBackwardsAreReported() {
    List<String> h = clean();
    h.set(7, "START c1 15 " + 150 * MS + " " + 400 * MS); // acquired after token 20's acquire returned
    h.set(8, "WRITE c1 15 2 " + 410 * MS + " " + 415 * MS + " REJECTED 20");
    h.set(10, "END c1 15 " + 500 * MS + " stopped");
    Result r = check(h, new FinalState(END.keys(), 22, 20));
    assertThat(r.tokenRegressions()).hasSize(1).first().asString().contains("c1 got 15", "c2 had got 20");
  }

  @Test
  void aTokenGivenTwiceIsReported() {
    List<String> h = clean();
    h.set(3, "START c2 10 " + 90 * MS + " " + 110 * MS);
    h.set(4, "WRITE c2 10 1 " + 120 * MS + " " + 125 * MS + " ACCEPTED 21");
    h.set(5, "WRITE c2 10 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22");
    h.set(6, "END c2 10 " + 200 * MS + " lost:EXPIRED");
    h.set(9, "WRITE c2 10 3 " + 420 * MS + " " + 430 * MS + " REJECTED 30");
    assertThat(check(h, END).tokenRegressions()).anyMatch(s -> s.contains("token 10 was given to two tenures"));
  }

  @Test
  void aStaleWriteAcceptedAfterANewerTokenIsReported() {
    List<String> h = clean();
    h.set(9, "WRITE c2 20 3 " + 180 * MS + " " + 430 * MS + " ACCEPTED 32"); // token 20 after token 30 at 31
    Result r = check(h, new FinalState(END.keys(), 32, 20));
    assertThat(r.staleWrites()).hasSize(1).first().asString().contains("stale write accepted: c2 with token 20");
  }

  @Test
  void anAcceptedWriteDecidedAfterTheLastTrueCheckAliveIsReported() {
    List<String> h = clean();
    h.set(5, "WRITE c2 20 2 " + 250 * MS + " " + 255 * MS + " ACCEPTED 22"); // c2's lastAlive is 200 ms
    assertThat(check(h, END).staleWrites()).hasSize(1).first().asString().contains("50.0 ms outside its tenure");
  }

  @Test
  void anAcceptedWriteWithoutATenureIsReported() {
    List<String> h = clean();
    h.set(5, "WRITE c2 99 2 " + 150 * MS + " " + 155 * MS + " ACCEPTED 22");
    assertThat(check(h, END).staleWrites()).anyMatch(s -> s.contains("belongs to no tenure"));
  }

  @Test
  void aLostAcknowledgedKeyIsReportedButAnUnacknowledgedOneIsNot() {
    Result r = check(clean(), new FinalState(Set.of("/faults/kv/c1/1"), 31, 30));
    assertThat(r.lostWrites()).containsExactly("acknowledged write lost: /faults/kv/c2/1 (revision 6, by c2)");
  }

  @Test
  void aRegisterOlderThanItsLastAcceptedWriteIsReported() {
    assertThat(check(clean(), new FinalState(END.keys(), 22, 20)).lostWrites())
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
}
