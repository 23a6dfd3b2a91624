package io.leasehold.client;

import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/** The whole contract on a real 3-node core, real time, TTL 3 s, faults through TCP proxies. */
@Tag("integration")
class CoreContractTest extends LeaseContractSuite {

  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = CoreFixture.startCluster("contract");
    CoreFixture.awaitServing(cluster);
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected ContractFixture createFixture() {
    return new CoreFixture(cluster);
  }
}
