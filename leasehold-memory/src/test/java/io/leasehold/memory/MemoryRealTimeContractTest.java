package io.leasehold.memory;

import io.leasehold.testkit.ContractFixture;
import io.leasehold.testkit.LeaseContractSuite;

/** The whole contract on the memory backend, on real time with a 1 s TTL and real threads. */
class MemoryRealTimeContractTest extends LeaseContractSuite {
  @Override
  protected ContractFixture createFixture() {
    return MemoryFixture.realTime();
  }
}
