package io.leasehold.etcd;

import io.etcd.jetcd.Client;
import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * The whole contract on a real single-member etcd (one per class), on real time with a 2 s TTL;
 * faults through a TCP proxy per contender.
 */
@Tag("integration")
class EtcdContractTest extends LeaseContractSuite {

  private static EtcdCluster cluster;
  private static Client admin;

  @BeforeAll
  static void startEtcd() {
    cluster = EtcdCluster.start(1);
    admin = Client.builder().endpoints(cluster.endpoint(0)).build();
  }

  @AfterAll
  static void stopEtcd() {
    if (admin != null) {
      admin.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Override
  protected ContractFixture createFixture() {
    return new EtcdFixture(cluster, admin);
  }
}
