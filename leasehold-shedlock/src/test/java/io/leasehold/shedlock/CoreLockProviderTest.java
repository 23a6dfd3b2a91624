package io.leasehold.shedlock;

import io.leasehold.LeaseBackend;
import io.leasehold.server.LocalCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;

/**
 * ShedLock's own provider suites, unchanged, on a real 3-node consistent core in this JVM: the
 * provider on one client, the locked/unlocked checks from a second client, as another node.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CoreLockProviderTest extends AbstractExtensibleLockProviderIntegrationTest {

  private static LocalCluster cluster;
  private static LeaseBackend node;
  private static LeaseBackend otherNode;
  private LeaseholdLockProvider provider;

  @BeforeAll
  static void startCluster() throws IOException {
    cluster =
        LocalCluster.start(3, 0, Files.createTempDirectory(Path.of("target"), "shedlock-"),
            c -> c.withElectionTimeout(Duration.ofMillis(150)));
    node = LeaseBackend.open(cluster.uri());
    otherNode = LeaseBackend.open(cluster.uri());
  }

  @AfterAll
  static void stopCluster() {
    if (node != null) {
      node.close();
      otherNode.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @BeforeEach
  void newProvider() {
    provider = LeaseholdLockProvider.builder(node).owner("shedlock-test").build();
  }

  @AfterEach
  void closeProvider() {
    provider.close();
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
