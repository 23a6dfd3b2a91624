package io.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scenario (d) of the contract with a real pause: the holder is a JVM of its own, frozen with
 * {@code SIGSTOP} for longer than the TTL. Another process takes the lease; then the holder is
 * woken up. It must not have believed itself the holder at any instant after the other process
 * got the lease, and its {@code onLost} must fire. A network backend extends this class with the
 * URI of a real store.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
public abstract class ProcessPauseSuite {

  /** {@return a URI the child JVM and this JVM both open, reaching the same real store} */
  protected abstract String backendUri();

  /** {@return the TTL of the lease; the pause lasts until another process holds it} */
  protected abstract Duration ttl();

  @Test
  void aHolderFrozenPastItsTtlNeverActsAfterTheNextHolderGotTheLease() throws Exception {
    String name = "process-pause-" + System.nanoTime();
    Duration ttl = ttl();
    Duration patience = ttl.multipliedBy(20).plusSeconds(20);
    try (HolderProcess frozen = HolderProcess.start(backendUri(), name, "frozen", ttl);
        LeaseBackend backend = LeaseBackend.open(backendUri());
        Lease next = backend.newLease(SuiteSettings.forTtl(name, "next", ttl).build())) {
      long frozenToken = frozen.awaitHeld(patience);

      frozen.suspend();
      Awaitility.await("the next holder to get the lease while the first is frozen")
          .atMost(patience)
          .pollInterval(ttl.dividedBy(10))
          .until(() -> next.acquire().get(ttl.toMillis() * 5, TimeUnit.MILLISECONDS));
      long nextHeldAt = System.nanoTime();
      frozen.resume();

      long frozenLastAlive = frozen.awaitDead(patience);
      assertThat(frozenLastAlive)
          .as("the woken holder's last checkAlive()=true instant must precede the next tenure")
          .isLessThan(nextHeldAt);
      assertThat(frozen.awaitLost(patience)).isIn("EXPIRED", "TAKEN_OVER");
      assertThat(next.fencingToken().orElseThrow())
          .as("the next tenure's fencing token")
          .isGreaterThan(frozenToken);
      next.release().get(ttl.toMillis() * 5, TimeUnit.MILLISECONDS);
    }
  }
}
