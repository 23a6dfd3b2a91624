package io.leasehold.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SessionKeeperTest {

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final SessionKeeper keeper = new SessionKeeper(now::get);

  private void pass(long millis) {
    now.addAndGet(millis * 1_000_000L);
  }

  @Test
  void aSessionExpiresOneTtlAfterItsLastKeepAlive() {
    keeper.granted(1, 1_000);
    pass(900);
    assertThat(keeper.keepAlive(1)).isTrue();
    pass(900);
    assertThat(keeper.expired()).isEmpty();
    pass(100);
    assertThat(keeper.expired()).containsExactly(1L);
  }

  @Test
  void aNewLeaderReArmsEverySessionForAFullTtlFromNow() {
    keeper.granted(1, 1_000);
    keeper.granted(2, 10_000);
    pass(800);
    keeper.rearmAll();
    pass(900);
    assertThat(keeper.expired()).as("session 1 got a full TTL from the re-arm").isEmpty();
    pass(100);
    assertThat(keeper.expired()).containsExactly(1L);
    pass(8_200);
    assertThat(keeper.expired()).as("session 2 lives 10 s from the re-arm, not from its grant").containsExactly(1L);
    pass(800);
    assertThat(keeper.expired()).containsExactlyInAnyOrder(1L, 2L);
  }

  @Test
  void aSessionPastItsDeadlineIsNotRevivedByALateKeepAlive() {
    keeper.granted(1, 1_000);
    pass(1_000);
    assertThat(keeper.keepAlive(1)).isFalse();
    assertThat(keeper.expired()).containsExactly(1L);
  }

  @Test
  void aKeepAliveDelayedPastTheExpiryCheckDoesNotReviveTheSession() {
    // The keep-alive reads the clock just before the deadline and is then descheduled; the expiry
    // check runs at the deadline and decides to expire the session; then the keep-alive resumes.
    AtomicReference<Runnable> whileReading = new AtomicReference<>();
    SessionKeeper racing =
        new SessionKeeper(
            () -> {
              long read = now.get();
              Runnable descheduled = whileReading.getAndSet(null);
              if (descheduled != null) {
                descheduled.run();
              }
              return read;
            });
    racing.granted(1, 1_000);
    pass(999);
    List<Long> expired = new ArrayList<>();
    whileReading.set(() -> {
      pass(1);
      expired.addAll(racing.expired());
    });

    boolean alive = racing.keepAlive(1);

    assertThat(expired).as("the expiry check saw the deadline pass").containsExactly(1L);
    assertThat(alive).as("a keep-alive answered after the session was judged expired").isFalse();
    assertThat(racing.expired()).as("the session stays expired").containsExactly(1L);
  }

  @Test
  void unknownSessionsAreNotKeptAlive() {
    assertThat(keeper.keepAlive(7)).isFalse();
    keeper.reset(Map.of(7L, 1_000L));
    assertThat(keeper.keepAlive(7)).isTrue();
    keeper.ended(7);
    assertThat(keeper.keepAlive(7)).isFalse();
  }
}
