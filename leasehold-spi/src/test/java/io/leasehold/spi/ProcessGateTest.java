package io.leasehold.spi;

import io.leasehold.Scheduler;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class ProcessGateTest {

  private final VirtualClock clock = new VirtualClock();
  private final ProcessGate gate = new ProcessGate();
  private final Scheduler timers = gate.timers(clock);
  private final List<String> ran = new ArrayList<>();

  @Test
  void workDueDuringAPauseRunsOnResumeInOrder() {
    timers.schedule(() -> ran.add("first"), 10);
    timers.schedule(() -> ran.add("second"), 20);
    gate.pause();
    clock.advance(Duration.ofNanos(30));
    assertThat(ran).isEmpty();

    gate.resume();
    clock.advance(Duration.ZERO);

    assertThat(ran).containsExactly("first", "second");
  }

  @Test
  void aTaskCancelledWhileDeferredNeverRuns() {
    Scheduler.Cancellable timer = timers.schedule(() -> ran.add("cancelled"), 10);
    gate.pause();
    clock.advance(Duration.ofNanos(10)); // due while paused: deferred

    timer.cancel();
    gate.resume();
    clock.advance(Duration.ZERO);

    assertThat(ran).isEmpty();
  }

  @Test
  void aCrashDropsEverything() {
    timers.schedule(() -> ran.add("due later"), 10);
    gate.pause();
    timers.schedule(() -> ran.add("deferred"), 0);
    clock.advance(Duration.ZERO);

    gate.crash();
    clock.advance(Duration.ofNanos(20));

    assertThat(ran).isEmpty();
    assertThat(gate.state()).isEqualTo(ProcessGate.State.CRASHED);
  }
}
