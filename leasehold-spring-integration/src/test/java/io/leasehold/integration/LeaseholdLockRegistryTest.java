package io.leasehold.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.leasehold.LeaseLost;
import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import io.leasehold.memory.StoredLease;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.dao.CannotAcquireLockException;

/** The Lock semantics Spring users expect from a registry, on the memory backend in real time. */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LeaseholdLockRegistryTest {

  private static final Duration TTL = Duration.ofMillis(900);

  private MemoryStore store;
  private MemoryBackend node1;
  private MemoryBackend node2;
  private LeaseholdLockRegistry registry1;
  private LeaseholdLockRegistry registry2;

  @BeforeEach
  void start() {
    store = MemoryStore.create();
    node1 = store.connect();
    node2 = store.connect();
    registry1 = new LeaseholdLockRegistry(node1, "node-1", TTL);
    registry2 = new LeaseholdLockRegistry(node2, "node-2", TTL);
  }

  @AfterEach
  void stop() {
    node1.close();
    node2.close();
  }

  @Test
  void aLockExcludesOtherProcessesAndIsReentrantForItsThread() throws Exception {
    LeaseLock lock = registry1.obtain("orders");
    assertThat(registry1.obtain("orders")).isSameAs(lock);

    lock.lock();
    long token = lock.fencingToken().orElseThrow();
    assertThat(lock.tryLock()).as("reentrant").isTrue();
    assertThat(lock.fencingToken()).hasValue(token);
    lock.unlock();
    assertThat(lock.checkAlive()).as("still held after the nested unlock").isTrue();

    assertThat(registry2.obtain("orders").tryLock(100, TimeUnit.MILLISECONDS))
        .as("another process is refused while it is held")
        .isFalse();
    assertThat(CompletableFuture.supplyAsync(lock::tryLock).get())
        .as("another thread of this process is refused")
        .isFalse();

    lock.unlock();
    assertThat(lock.checkAlive()).isFalse();
    assertThat(lock.fencingToken()).isEmpty();

    LeaseLock other = registry2.obtain("orders");
    assertThat(other.tryLock()).as("free once released").isTrue();
    assertThat(other.fencingToken().orElseThrow()).isGreaterThan(token);
    other.unlock();
  }

  @Test
  void onlyTheOwningThreadMayUnlock() throws Exception {
    LeaseLock lock = registry1.obtain("owned");
    lock.lock();
    Throwable byOther = CompletableFuture.runAsync(lock::unlock).handle((v, e) -> e).get();
    assertThat(byOther).hasRootCauseInstanceOf(IllegalStateException.class);
    lock.unlock();
    assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class).hasMessageContaining("does not hold");
  }

  @Test
  void aLockWaitsForTheHolderToRelease() throws Exception {
    LeaseLock held = registry2.obtain("handover");
    held.lock();
    CompletableFuture<Long> waiter =
        CompletableFuture.supplyAsync(
            () -> {
              LeaseLock lock = registry1.obtain("handover");
              lock.lock();
              try {
                return lock.fencingToken().orElseThrow();
              } finally {
                lock.unlock();
              }
            });
    long first = held.fencingToken().orElseThrow();
    held.unlock();
    assertThat(waiter.get(30, TimeUnit.SECONDS)).isGreaterThan(first);
  }

  @Test
  void unlockReportsALeaseLostMeanwhile() {
    LeaseLock lock = registry1.obtain("lost-before-unlock");
    List<LeaseLost> losses = new CopyOnWriteArrayList<>();
    lock.onLost(losses::add);
    lock.lock();

    store.revoke("lost-before-unlock");
    await().atMost(Duration.ofSeconds(10)).until(() -> !lock.checkAlive() && !losses.isEmpty());

    assertThatThrownBy(lock::unlock)
        .isInstanceOf(ConcurrentModificationException.class)
        .hasMessageContaining("lost-before-unlock")
        .hasMessageContaining("REVOKED");
    assertThat(lock.isHeldByCurrentThread()).isFalse();
    assertThat(losses).extracting(LeaseLost::kind).containsExactly(LeaseLost.Kind.REVOKED);
  }

  @Test
  void aNestedAcquisitionAfterALossFailsAndDropsTheThreadsHolds() throws Exception {
    LeaseLock lock = registry1.obtain("nested-after-loss");
    lock.lock();
    lock.lock();
    store.revoke("nested-after-loss");
    await().atMost(Duration.ofSeconds(10)).until(() -> !lock.checkAlive());

    assertThat(lock.tryLock()).as("a nested tryLock sees the loss").isFalse();
    assertThat(lock.isHeldByCurrentThread()).as("the thread's holds are dropped").isFalse();
    // The caller's two outstanding unlock() calls each report the loss.
    assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class);
    assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class);
    assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);

    // The lock is usable again, by any thread.
    assertThat(CompletableFuture.supplyAsync(() -> {
      boolean got = lock.tryLock();
      if (got) {
        lock.unlock();
      }
      return got;
    }).get()).isTrue();
  }

  @Test
  void aNestedLockAfterALossThrows() {
    LeaseLock lock = registry1.obtain("nested-lock-after-loss");
    lock.lock();
    store.revoke("nested-lock-after-loss");
    await().atMost(Duration.ofSeconds(10)).until(() -> !lock.checkAlive());
    assertThatThrownBy(lock::lock).isInstanceOf(CannotAcquireLockException.class).hasMessageContaining("lost");
    assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class);
  }

  @Test
  void renewLockConfirmsTheTenure() {
    LeaseLock lock = registry1.obtain("renewed");
    assertThatThrownBy(() -> registry1.renewLock("renewed")).isInstanceOf(IllegalStateException.class);
    lock.lock();
    registry1.renewLock("renewed");
    store.revoke("renewed");
    await().atMost(Duration.ofSeconds(10)).until(() -> !lock.checkAlive());
    assertThatThrownBy(() -> registry1.renewLock("renewed"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("lost");
  }

  @Test
  void renewLockWithATtlConfirmsATenureOfThatTtl() {
    LeaseLock lock = registry1.obtain("renewed-ttl");
    assertThatThrownBy(() -> registry1.renewLock("renewed-ttl", TTL)).isInstanceOf(IllegalStateException.class);
    lock.lock();
    registry1.renewLock("renewed-ttl", TTL);
    assertThatThrownBy(() -> registry1.renewLock("renewed-ttl", Duration.ofSeconds(30)))
        .as("a held lease keeps the TTL it was acquired with")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lock(ttl)");
    assertThat(lock.checkAlive()).isTrue();
    store.revoke("renewed-ttl");
    await().atMost(Duration.ofSeconds(10)).until(() -> !lock.checkAlive());
    assertThatThrownBy(() -> registry1.renewLock("renewed-ttl", TTL))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("lost");
  }

  @Test
  void aLockTakenWithATtlIsKeptByTheStoreForThatTtl() throws Exception {
    LeaseLock lock = registry1.obtain("long-ttl");
    lock.lock(Duration.ofSeconds(30));
    assertThat(store.lookup("long-ttl").map(StoredLease::expiresIn).orElseThrow())
        .as("the store's record lives by the TTL asked for, not the registry's")
        .isGreaterThan(TTL);
    assertThat(registry2.obtain("long-ttl").tryLock(Duration.ofMillis(100), Duration.ofSeconds(5)))
        .as("another process is refused")
        .isFalse();
    registry1.renewLock("long-ttl", Duration.ofSeconds(30));
    lock.unlock();
    assertThat(store.lookup("long-ttl")).as("released").isEmpty();

    assertThat(registry2.obtain("long-ttl").tryLock(Duration.ofSeconds(5), Duration.ofSeconds(20))).isTrue();
    assertThat(store.lookup("long-ttl").map(StoredLease::expiresIn).orElseThrow())
        .isGreaterThan(Duration.ofSeconds(10));
    registry2.obtain("long-ttl").unlock();

    lock.lock();
    assertThat(store.lookup("long-ttl").map(StoredLease::expiresIn).orElseThrow())
        .as("a plain lock() takes the registry's TTL again")
        .isLessThanOrEqualTo(TTL);
    lock.unlock();
  }

  @Test
  void aNestedAcquisitionKeepsTheTenuresTtl() throws Exception {
    LeaseLock lock = registry1.obtain("nested-ttl");
    lock.lock(Duration.ofSeconds(30));
    long token = lock.fencingToken().orElseThrow();
    assertThatThrownBy(() -> lock.lock(Duration.ofSeconds(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nested");
    assertThat(lock.tryLock(Duration.ZERO, Duration.ofSeconds(30))).as("the same TTL: reentrant").isTrue();
    assertThat(lock.tryLock()).as("no TTL asked: reentrant").isTrue();
    assertThat(lock.fencingToken()).hasValue(token);
    lock.unlock();
    lock.unlock();
    assertThat(lock.checkAlive()).as("the refused acquisition took no hold").isTrue();
    lock.unlock();
    assertThat(lock.isHeldByCurrentThread()).isFalse();
    assertThat(store.lookup("nested-ttl")).isEmpty();
  }

  @Test
  void aTtlOutOfALeasesRangeIsRefusedAndTakesNoHold() {
    LeaseLock lock = registry1.obtain("bad-ttl");
    assertThatThrownBy(() -> lock.lock(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ttl");
    assertThatThrownBy(() -> lock.tryLock(Duration.ZERO, Duration.ofHours(25)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl");
    assertThat(lock.isHeldByCurrentThread()).isFalse();
    assertThat(lock.tryLock()).as("usable afterwards").isTrue();
    lock.unlock();
  }

  @Test
  void expireUnusedForgetsOnlyUnlockedLocks() {
    LeaseLock held = registry1.obtain("kept");
    LeaseLock idle = registry1.obtain("dropped");
    held.lock();
    registry1.expireUnusedOlderThan(0);
    assertThat(registry1.obtain("kept")).isSameAs(held);
    assertThat(registry1.obtain("dropped")).isNotSameAs(idle);
    held.unlock();
  }

  @Test
  void badKeysAndSettingsAreRefused() {
    assertThatThrownBy(() -> registry1.obtain(42)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lockKey");
    assertThatThrownBy(() -> new LeaseholdLockRegistry(node1, "node-1", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl");
  }
}
