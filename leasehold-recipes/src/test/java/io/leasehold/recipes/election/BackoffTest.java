package io.leasehold.recipes.election;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class BackoffTest {

  @Test
  void delaysDoubleUpToTheMaximumWithJitterInTheUpperHalf() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofMillis(1000), new SplittableRandom(1));
    long[] ceilings = {100, 200, 400, 800, 1000, 1000, 1000};
    for (long ceiling : ceilings) {
      long ms = b.nextDelayNanos() / 1_000_000;
      assertThat(ms).isBetween(ceiling / 2, ceiling);
    }
    b.reset();
    assertThat(b.nextDelayNanos() / 1_000_000).isBetween(50L, 100L);
  }

  @Test
  void jitterSpreadsContendersThatFailedTogether() {
    Backoff one = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), new SplittableRandom(1));
    Backoff two = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), new SplittableRandom(2));
    assertThat(one.nextDelayNanos()).isNotEqualTo(two.nextDelayNanos());
  }
}
