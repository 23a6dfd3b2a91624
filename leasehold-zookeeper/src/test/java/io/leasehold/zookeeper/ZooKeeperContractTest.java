package io.leasehold.zookeeper;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole contract suite against a real ZooKeeper server (in process), on real time, with a
 * 1 s TTL and a 1 s session timeout; every contender reaches the server through a TCP proxy.
 */
@Tag("integration")
class ZooKeeperContractTest extends LeaseContractSuite {

  static final Duration TTL = Duration.ofSeconds(1);

  @RegisterExtension static final StandaloneZooKeeper zk = new StandaloneZooKeeper(ZooKeeperFixture.CHROOT);


  @Override
  protected ContractFixture createFixture() {
    return new ZooKeeperFixture(
        new InetSocketAddress("127.0.0.1", zk.server().getPort()), zk.admin(), TTL);
  }
}
