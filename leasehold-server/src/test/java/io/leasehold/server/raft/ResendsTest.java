package io.leasehold.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A copy a stepping-down leader refused is sent again when this node learns of the new leader,
 * not only after its pause; and whatever wakes it, once.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ResendsTest {

  private static final long AN_HOUR = TimeUnit.HOURS.toNanos(1);

  @Test
  void aNewLeaderSendsEveryWaitingCopyNowAndEachOnce() {
    AtomicInteger first = new AtomicInteger();
    AtomicInteger second = new AtomicInteger();
    try (Resends resends = new Resends("n1")) {
      assertThat(resends.after(AN_HOUR, first::incrementAndGet)).isTrue();
      assertThat(resends.after(AN_HOUR, second::incrementAndGet)).isTrue();
      assertThat(resends.waiting()).isEqualTo(2);

      resends.now();
      await().atMost(Duration.ofSeconds(10)).until(() -> first.get() == 1 && second.get() == 1);
      assertThat(resends.waiting()).isZero();

      resends.now(); // nothing waits any more
    }
    assertThat(first).as("sent once, though woken and closed after").hasValue(1);
    assertThat(second).hasValue(1);
  }

  @Test
  void aCopyGoesOutAfterItsPauseWithoutAWakeUp() {
    AtomicInteger sent = new AtomicInteger();
    try (Resends resends = new Resends("n1")) {
      resends.after(TimeUnit.MILLISECONDS.toNanos(5), sent::incrementAndGet);
      await().atMost(Duration.ofSeconds(10)).until(() -> sent.get() == 1);
      assertThat(resends.waiting()).isZero();
    }
    assertThat(sent).hasValue(1);
  }

  @Test
  void closingSendsWhatWaitsAndRefusesMore() {
    AtomicInteger sent = new AtomicInteger();
    Resends resends = new Resends("n1");
    resends.after(AN_HOUR, sent::incrementAndGet);
    resends.close();
    assertThat(sent).as("sent at close, so its caller gets an answer").hasValue(1);
    assertThat(resends.after(AN_HOUR, sent::incrementAndGet)).as("refused once closed").isFalse();
    assertThat(resends.waiting()).isZero();
  }
}
