package io.leasehold.shedlock;

import io.leasehold.memory.MemoryBackend;
import io.leasehold.memory.MemoryStore;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

/**
 * ShedLock's own provider suites, unchanged, on the memory backend in real time: the provider on
 * one simulated process, the locked/unlocked checks from another.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MemoryLockProviderTest extends AbstractExtensibleLockProviderIntegrationTest {

  private MemoryBackend node;
  private MemoryBackend otherNode;
  private LeaseholdLockProvider provider;

  @BeforeEach
  void start() {
    MemoryStore store = MemoryStore.create();
    node = store.connect();
    otherNode = store.connect();
    provider = LeaseholdLockProvider.builder(node).owner("shedlock-test").build();
  }

  @AfterEach
  void stop() {
    provider.close();
    node.close();
    otherNode.close();
  }

  @Override
  protected ExtensibleLockProvider getLockProvider() {
    return provider;
  }

  @Override
  protected void assertUnlocked(String lockName) {
    new StoreProbe(otherNode).assertUnlocked(lockName);
  }

  @Override
  protected void assertLocked(String lockName) {
    new StoreProbe(otherNode).assertLocked(lockName);
  }
}
