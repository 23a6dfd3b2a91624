package io.leasehold.kubernetes;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;
import org.junit.jupiter.api.Tag;

/**
 * The whole contract on the Kubernetes backend against fabric8's mock API server in CRUD mode, on
 * real time with a 3 s TTL (see KubernetesFixture#ttl), each contender behind its own TCP proxy.
 */
@Tag("integration")
class KubernetesContractTest extends LeaseContractSuite {
  @Override
  protected ContractFixture createFixture() {
    return new KubernetesFixture();
  }
}
