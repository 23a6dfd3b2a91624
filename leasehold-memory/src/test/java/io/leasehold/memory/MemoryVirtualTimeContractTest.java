package io.leasehold.memory;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;

/** The whole contract on the memory backend, on virtual time (TTL 10 s, no waiting). */
class MemoryVirtualTimeContractTest extends LeaseContractSuite {
  @Override
  protected ContractFixture createFixture() {
    return MemoryFixture.virtualTime();
  }
}
