package io.leasehold.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;

/**
 * Asks the store, as another node would, whether a ShedLock lock is held: a fresh holder tries to
 * take the lease once; refused means locked, granted (then given back) means unlocked.
 */
final class StoreProbe {
  private final LeaseBackend otherNode;

  StoreProbe(LeaseBackend otherNode) {
    this.otherNode = otherNode;
  }

  void assertLocked(String lockName) {
    assertThat(held(lockName)).as("lock '%s' is held in the store", lockName).isTrue();
  }

  void assertUnlocked(String lockName) {
    assertThat(held(lockName)).as("lock '%s' is free in the store", lockName).isFalse();
  }

  private boolean held(String lockName) {
    LeaseSettings settings =
        LeaseSettings.builder(LeaseholdLockProvider.DEFAULT_NAME_PREFIX + lockName, "probe")
            .acquireRetries(0)
            .build();
    try (Lease probe = otherNode.newLease(settings)) {
      return !probe.acquire().join(); // close() gives a granted probe back
    }
  }
}
