package io.leasehold.client;

import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.ProcessPauseSuite;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/** A holder JVM frozen with SIGSTOP past its TTL, on a real 3-node core. */
@Tag("integration")
class CoreProcessPauseTest extends ProcessPauseSuite {

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = CoreFixture.startCluster("pause");
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected String backendUri() {
    return cluster.uri();
  }

  @Override
  protected Duration ttl() {
    return CoreFixture.TTL;
  }
}
