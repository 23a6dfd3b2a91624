package io.leasehold.spring.boot;

import io.leasehold.LeaseSettings;
import java.util.function.Function;

/**
 * The application's lease defaults ({@code leasehold.owner} and {@code leasehold.lease.*}) as a
 * bean: lease name in, settings out. Inject it to make leases with the configured defaults.
 */
public final class LeaseSettingsTemplate implements Function<String, LeaseSettings> {

  private final LeaseholdProperties.Lease lease;
  private final String owner;

  LeaseSettingsTemplate(LeaseholdProperties properties) {
    this.lease = properties.getLease();
    this.owner = properties.getOwner() != null ? properties.getOwner() : defaultOwner();
    apply("leasehold-settings-check"); // bad values fail at startup, naming the property
  }

  /** {@return the owner name the application's leases are held as} */
  public String owner() {
    return owner;
  }

  /**
   * The settings of one lease, with the configured defaults.
   *
   * @param leaseName the lease name
   * @return its settings
   * @throws IllegalArgumentException if {@code leaseName} is not a valid lease name (before, this was
   *     reported as a bad {@code leasehold.owner})
   */
  @Override
  public LeaseSettings apply(String leaseName) {
    return lease.settings(leaseName, owner);
  }

  private static String defaultOwner() {
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      host = "unknown-host";
    }
    return ProcessHandle.current().pid() + "@" + host;
  }
}
