package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The verdict the demo prints must be able to fail: checked here on made-up histories. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class SafetyVerdictTest {

  @Test
  void tenuresOneAfterAnotherWithGrowingTokensAreSafe() {
    DemoHistory history = new DemoHistory();
    history.begin("node-1", 1, 0).end(100, "released");
    history.begin("node-2", 2, 150).end(300, "released");
    history.begin("node-2", 4, 300).end(400, "released");

    DemoHistory.Verdict verdict = history.verdict();

    assertThat(verdict).isEqualTo(new DemoHistory.Verdict(0, true, 1));
    assertThat(verdict.safe()).isTrue();
  }

  @Test
  void aTenureThatBeginsBeforeAnEarlierOneEndedOverlaps() {
    DemoHistory history = new DemoHistory();
    history.begin("node-1", 1, 0).end(200, "released");
    history.begin("node-2", 2, 150).end(300, "released");

    assertThat(history.verdict().overlaps()).isEqualTo(1);
    assertThat(history.verdict().safe()).isFalse();
  }

  @Test
  void aTenureThatNeverEndedOverlapsEveryLaterOne() {
    DemoHistory history = new DemoHistory();
    history.begin("node-1", 1, 0);
    history.begin("node-2", 2, 1_000).end(2_000, "released");

    assertThat(history.verdict().overlaps()).isEqualTo(1);
  }

  @Test
  void aTokenThatDoesNotGrowIsUnsafe() {
    DemoHistory history = new DemoHistory();
    history.begin("node-1", 5, 0).end(100, "released");
    history.begin("node-2", 5, 200).end(300, "released");

    assertThat(history.verdict().tokensIncreasing()).isFalse();
    assertThat(history.verdict().safe()).isFalse();
  }

  @Test
  void aHolderThatNoticesItsLossLateHeldTheLeaseOnlyUntilItsSafeDeadline() {
    TenureRecord paused = new TenureRecord("node-1", 1, 0);
    paused.safeUntil(900);

    paused.end(4_000, "expired"); // woke up from a pause long after the deadline

    assertThat(paused.end()).isEqualTo(900);
    assertThat(paused.end(5_000, "lost: EXPIRED")).isFalse();
    assertThat(paused.endedBy()).isEqualTo("expired");
  }

  @Test
  void theFencedRegisterTurnsAwayOnlyLowerTokens() {
    FencedRegister register = new FencedRegister();

    assertThat(register.write(3, "node-1").accepted()).isTrue();
    assertThat(register.write(3, "node-1").accepted()).isTrue();
    assertThat(register.write(5, "node-2").accepted()).isTrue();
    FencedRegister.Outcome stale = register.write(3, "node-1");

    assertThat(stale).isEqualTo(new FencedRegister.Outcome(false, 5));
    assertThat(register.value()).isEqualTo("node-2");
    assertThat(register.accepted()).isEqualTo(3);
    assertThat(register.rejected()).isEqualTo(1);
  }
}
