package io.leasehold.testkit;

import io.leasehold.LeaseSettings;
import java.time.Duration;

/** The settings the testkit gives its leases, all derived from one TTL. */
public final class SuiteSettings {

  private SuiteSettings() {}

  /**
   * A builder with the testkit's settings for a TTL: heartbeat every quarter TTL, operations time
   * out after a fifth, retries every twentieth, a safety margin of a fifth, 1 % clock drift, and
   * no acquire retries (the tests retry themselves where they mean to).
   *
   * @param name the lease name
   * @param owner the owner name
   * @param ttl the TTL
   * @return a builder a test may adjust further
   */
  public static LeaseSettings.Builder forTtl(String name, String owner, Duration ttl) {
    return LeaseSettings.builder(name, owner)
        .ttl(ttl)
        .heartbeatInterval(ttl.dividedBy(4))
        .operationTimeout(ttl.dividedBy(5))
        .retryInterval(ttl.dividedBy(20))
        .safetyMargin(ttl.dividedBy(5))
        .maxClockDrift(0.01)
        .acquireRetries(0);
  }
}
