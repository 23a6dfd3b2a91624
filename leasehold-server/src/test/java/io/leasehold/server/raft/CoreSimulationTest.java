package io.leasehold.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs {@link CoreSimulation} over many seeds: late, duplicated, reordered and lost calls and
 * replies, leader changes, snapshots, frozen processes and slow loss handlers, checked at every
 * simulated instant. A failing seed is printed; run it alone with {@code -Dleasehold.sim.first=SEED
 * -Dleasehold.sim.seeds=1}, or many more with {@code -Dleasehold.sim.seeds=N} (docs/faults.md).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class CoreSimulationTest {

  private static final long FIRST = Long.getLong("leasehold.sim.first", 1);
  private static final int SEEDS = Integer.getInteger("leasehold.sim.seeds", 1500);
  private static final Duration RUN_FOR = Duration.ofSeconds(Long.getLong("leasehold.sim.seconds", 15));

  @Test
  void noSeedBreaksTheRules() {
    List<CoreSimulation.Outcome> failed = new ArrayList<>();
    long tenures = 0;
    long lateCopies = 0;
    long leaderChanges = 0;
    long revokes = 0;
    long started = System.nanoTime();
    for (long seed = FIRST; seed < FIRST + SEEDS; seed++) {
      CoreSimulation.Outcome outcome = CoreSimulation.run(seed, CoreSimulation.Faults.standard(), RUN_FOR);
      tenures += outcome.tenures();
      lateCopies += outcome.lateCopies();
      leaderChanges += outcome.leaderChanges();
      revokes += outcome.revokes();
      if (!outcome.violations().isEmpty()) {
        failed.add(outcome);
        if (failed.size() >= 3) {
          break;
        }
      }
    }
    System.out.printf(
        "simulation: seeds %d-%d, %d tenures, %d late copies, %d leader changes, %d operator revokes, %d s%n",
        FIRST, FIRST + SEEDS - 1, tenures, lateCopies, leaderChanges, revokes,
        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
    assertThat(failed).as("seeds that broke a rule").isEmpty();
    assertThat(tenures).as("the runs made tenures to check").isGreaterThan(SEEDS);
    assertThat(lateCopies).as("and late copies").isGreaterThan(SEEDS);
    assertThat(revokes).as("and operator revokes").isGreaterThan(SEEDS / 10);
  }

  @Test
  void aSeedGivesTheSameHistoryEachTime() {
    CoreSimulation.Outcome first = CoreSimulation.run(42, CoreSimulation.Faults.standard(), Duration.ofSeconds(10));
    CoreSimulation.Outcome again = CoreSimulation.run(42, CoreSimulation.Faults.standard(), Duration.ofSeconds(10));
    assertThat(again).isEqualTo(first);
  }
}
