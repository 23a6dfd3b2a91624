package io.leasehold.etcd;

import io.leasehold.testkit.ProcessPauseSuite;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * Scenario (d) with a real pause: a holder JVM frozen with {@code SIGSTOP} (its jetcd threads
 * too) while another process takes the lease from a real etcd.
 */
@Tag("integration")
class EtcdProcessPauseTest extends ProcessPauseSuite {

  private static EtcdCluster cluster;

  @BeforeAll
  static void startEtcd() {
    cluster = EtcdCluster.start(1);
  }

  @AfterAll
  static void stopEtcd() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected String backendUri() {
    return cluster.backendUri();
  }

  @Override
  protected Duration ttl() {
    return EtcdFixture.TTL;
  }
}
