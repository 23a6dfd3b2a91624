package io.leasehold.recipes.fencing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class FencingGuardTest {

  @Test
  void acceptsEqualAndGreaterTokensAndRejectsOlderOnes() {
    FencingGuard guard = new FencingGuard();
    assertThat(guard.highest()).isEmpty();

    assertThat(guard.tryAccept(3)).isTrue();
    assertThat(guard.tryAccept(3)).as("the same tenure writes again").isTrue();
    assertThat(guard.tryAccept(2)).as("an older tenure").isFalse();
    assertThat(guard.tryAccept(5)).isTrue();
    assertThat(guard.highest()).hasValue(5);
    assertThatThrownBy(() -> guard.check(4))
        .isInstanceOf(StaleTokenException.class)
        .hasMessageContaining("fencing token 4 is stale")
        .hasMessageContaining("token 5 was already accepted");
  }

  /**
   * Threads race with random tokens. Each records the guard's highest just before a rejection;
   * no accepted token may be below a token accepted earlier by the same thread's view, and the
   * final highest is the largest token offered.
   */
  @Test
  void underContentionNoTokenBelowTheHighestSoFarIsAccepted() throws Exception {
    FencingGuard guard = new FencingGuard();
    int threads = 8;
    ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      int seed = w;
      Thread t =
          new Thread(
              () -> {
                java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
                try {
                  start.await();
                } catch (InterruptedException e) {
                  return;
                }
                for (int i = 0; i < 100_000; i++) {
                  long token = random.nextLong(1_000_000);
                  long before = guard.highest().orElse(Long.MIN_VALUE);
                  boolean accepted = guard.tryAccept(token);
                  long after = guard.highest().orElse(Long.MIN_VALUE);
                  if (accepted && token < before) {
                    violations.add("accepted " + token + " after " + before + " was the highest");
                  }
                  if (after < before || (accepted && after < token)) {
                    violations.add("the highest went down: " + before + " -> " + after);
                  }
                }
              });
      workers.add(t);
      t.start();
    }
    start.countDown();
    for (Thread t : workers) {
      t.join();
    }

    assertThat(violations).isEmpty();
    assertThat(guard.highest()).hasValue(999_999);
  }
}
