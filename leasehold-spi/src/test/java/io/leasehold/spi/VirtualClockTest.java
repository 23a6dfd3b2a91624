package io.leasehold.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class VirtualClockTest {

  private final List<String> ran = new ArrayList<>();

  @Test
  void tasksRunInDueOrderEachAtItsOwnTime() {
    VirtualClock clock = new VirtualClock(100);
    List<Long> times = new ArrayList<>();
    clock.schedule(() -> times.add(clock.read()), 30);
    clock.schedule(() -> times.add(clock.read()), 10);
    clock.schedule(() -> times.add(clock.read()), 20);

    clock.advance(Duration.ofNanos(25));

    assertThat(times).containsExactly(110L, 120L);
    assertThat(clock.read()).isEqualTo(125);
    clock.advance(Duration.ofNanos(5));
    assertThat(times).containsExactly(110L, 120L, 130L);
  }

  @Test
  void tasksDueAtOneInstantRunInTheOrderTheyWereScheduled() {
    VirtualClock clock = new VirtualClock();
    clock.schedule(() -> ran.add("first"), 5);
    clock.schedule(() -> ran.add("second"), 5);
    clock.execute(() -> ran.add("now"));

    clock.advance(Duration.ofNanos(5));

    assertThat(ran).containsExactly("now", "first", "second");
  }

  @Test
  void tasksScheduledByTasksRunInTheSameAdvanceIfDue() {
    VirtualClock clock = new VirtualClock();
    clock.schedule(() -> clock.schedule(() -> ran.add("child"), 5), 5);

    clock.advance(Duration.ofNanos(10));

    assertThat(ran).containsExactly("child");
  }

  @Test
  void orderSurvivesTheOverflowOfTheReading() {
    VirtualClock clock = new VirtualClock(Long.MAX_VALUE - 10);
    clock.schedule(() -> ran.add("after the wrap"), 20);
    clock.schedule(() -> ran.add("before the wrap"), 5);

    clock.advance(Duration.ofNanos(30));

    assertThat(ran).containsExactly("before the wrap", "after the wrap");
    assertThat(clock.read()).isEqualTo(Long.MIN_VALUE + 19);
  }

  /** A task that takes time: it advances the clock itself, and time never goes back after it. */
  @Test
  void aTaskThatAdvancesTheClockItselfRunsWhatFallsDueMeanwhileAndTimeNeverGoesBack() {
    VirtualClock clock = new VirtualClock(0);
    List<Long> times = new ArrayList<>();
    clock.schedule(() -> clock.advance(Duration.ofNanos(50)), 10); // takes 50 ns
    clock.schedule(() -> times.add(clock.read()), 30); // falls due while it runs
    clock.schedule(() -> times.add(clock.read()), 80);

    clock.advance(Duration.ofNanos(20));

    assertThat(times).containsExactly(30L);
    assertThat(clock.read()).as("where the task left it, not the outer target 20").isEqualTo(60);
    clock.advance(Duration.ofNanos(20));
    assertThat(times).containsExactly(30L, 80L);
  }

  @Test
  void aCancelledTaskDoesNotRun() {
    VirtualClock clock = new VirtualClock();
    clock.schedule(() -> ran.add("cancelled"), 5).cancel();

    clock.advance(Duration.ofNanos(5));

    assertThat(ran).isEmpty();
  }

  @Test
  void negativeAdvancesAreRejectedAndAFailingTaskIsReported() {
    VirtualClock clock = new VirtualClock();
    assertThatThrownBy(() -> clock.advance(Duration.ofNanos(-1)))
        .isInstanceOf(IllegalArgumentException.class);

    clock.schedule(
        () -> {
          throw new IllegalStateException("boom");
        },
        1);
    assertThatThrownBy(() -> clock.advance(Duration.ofNanos(1)))
        .hasMessageContaining("a task scheduled on the virtual clock threw")
        .hasRootCauseMessage("boom");
  }
}
