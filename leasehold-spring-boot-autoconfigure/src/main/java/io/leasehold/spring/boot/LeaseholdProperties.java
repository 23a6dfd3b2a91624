package io.leasehold.spring.boot;

import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Leasehold's settings under {@code leasehold.*}: which store, who holds, and the defaults of
 * every lease the application makes through the auto-configured beans.
 */
@ConfigurationProperties(prefix = "leasehold")
public class LeaseholdProperties {

  /**
   * The lease store, as a backend URI: leasehold://host:port[,host:port], etcd://host:2379,
   * zookeeper://host:2181, kubernetes:, or memory: (tests only: a store inside this JVM). Nothing
   * is configured while it is unset.
   */
  private String backend;

  /**
   * Who holds the application's leases, for example the host or pod name; default pid@host. Each
   * lease object adds its own incarnation id, so a restarted process is a new holder.
   */
  private String owner;

  /** Defaults of every lease made by the auto-configured beans. */
  private final Lease lease = new Lease();

  /** The ShedLock lock provider. */
  private final Shedlock shedlock = new Shedlock();

  /** The Spring Integration lock registry. */
  private final Integration integration = new Integration();

  /**
   * Leader elections, one per role (the key): each makes a LeaseholdLeaderInitiator bean named
   * leaseholdLeaderInitiator-ROLE that contends while the context runs and publishes
   * LeaderGrantedEvent and LeaderRevokedEvent.
   */
  private final Map<String, LeaderElection> leaderElection = new LinkedHashMap<>();

  /** The Actuator health indicator, made when Spring Boot Actuator is on the class path. */
  private final Health health = new Health();

  public String getBackend() {
    return backend;
  }

  public void setBackend(String backend) {
    this.backend = backend;
  }

  public String getOwner() {
    return owner;
  }

  public void setOwner(String owner) {
    this.owner = owner;
  }

  public Lease getLease() {
    return lease;
  }

  public Shedlock getShedlock() {
    return shedlock;
  }

  public Integration getIntegration() {
    return integration;
  }

  public Map<String, LeaderElection> getLeaderElection() {
    return leaderElection;
  }

  public Health getHealth() {
    return health;
  }

  /** Lease defaults; unset values take {@link LeaseSettings}' defaults. */
  public static class Lease {
    /** How long the store keeps a lease after the last renewal it received (1 ms to 24 h); default 15s. */
    private Duration ttl;

    /** How often the holder renews; default ttl / 3, and below the safe window. */
    private Duration heartbeatInterval;

    /** Further attempts before an acquire answers (0 to 100); default 2. */
    private Integer acquireRetries;

    /** Pause between attempts and between renewal retries (1 ms to 1 h); default ttl / 10, at most 500ms. */
    private Duration retryInterval;

    /** How long one store operation may take (1 ms to 1 h); default heartbeat-interval / 2, at most 5s. */
    private Duration operationTimeout;

    /** Largest clock-rate difference between holder and store (0 to below 0.5); default 0.01. */
    private Double maxClockDrift;

    /** Time kept in hand at the end of each tenure for handlers to stop work; default ttl / 10. */
    private Duration safetyMargin;

    public Duration getTtl() {
      return ttl;
    }

    public void setTtl(Duration ttl) {
      this.ttl = ttl;
    }

    public Duration getHeartbeatInterval() {
      return heartbeatInterval;
    }

    public void setHeartbeatInterval(Duration heartbeatInterval) {
      this.heartbeatInterval = heartbeatInterval;
    }

    public Integer getAcquireRetries() {
      return acquireRetries;
    }

    public void setAcquireRetries(Integer acquireRetries) {
      this.acquireRetries = acquireRetries;
    }

    public Duration getRetryInterval() {
      return retryInterval;
    }

    public void setRetryInterval(Duration retryInterval) {
      this.retryInterval = retryInterval;
    }

    public Duration getOperationTimeout() {
      return operationTimeout;
    }

    public void setOperationTimeout(Duration operationTimeout) {
      this.operationTimeout = operationTimeout;
    }

    public Double getMaxClockDrift() {
      return maxClockDrift;
    }

    public void setMaxClockDrift(Double maxClockDrift) {
      this.maxClockDrift = maxClockDrift;
    }

    public Duration getSafetyMargin() {
      return safetyMargin;
    }

    public void setSafetyMargin(Duration safetyMargin) {
      this.safetyMargin = safetyMargin;
    }

    /**
     * The settings of lease {@code name} held as {@code owner}, with these defaults applied.
     *
     * @throws InvalidConfigurationPropertyValueException naming the property whose value is out
     *     of range, so the application fails to start with that property in the message
     * @throws IllegalArgumentException if {@code name} is not a valid lease name
     */
    LeaseSettings settings(String name, String owner) {
      LeaseSettings.Builder b;
      try {
        b = LeaseSettings.builder(name, owner);
      } catch (IllegalArgumentException e) {
        if (e.getMessage() == null || !e.getMessage().startsWith("owner")) {
          throw e; // a bad lease name: the caller knows which property (if any) gave it
        }
        throw new InvalidConfigurationPropertyValueException("leasehold.owner", owner, e.getMessage());
      }
      apply("leasehold.lease.ttl", ttl, b::ttl);
      apply("leasehold.lease.heartbeat-interval", heartbeatInterval, b::heartbeatInterval);
      apply("leasehold.lease.acquire-retries", acquireRetries, b::acquireRetries);
      apply("leasehold.lease.retry-interval", retryInterval, b::retryInterval);
      apply("leasehold.lease.operation-timeout", operationTimeout, b::operationTimeout);
      apply("leasehold.lease.max-clock-drift", maxClockDrift, b::maxClockDrift);
      apply("leasehold.lease.safety-margin", safetyMargin, b::safetyMargin);
      try {
        return b.build();
      } catch (IllegalArgumentException e) {
        // build() checks how values fit together; its message names the setting it blames.
        String blamed =
            e.getMessage().startsWith("heartbeatInterval")
                ? "leasehold.lease.heartbeat-interval"
                : "leasehold.lease.safety-margin";
        Object value = blamed.endsWith("heartbeat-interval") ? heartbeatInterval : safetyMargin;
        throw new InvalidConfigurationPropertyValueException(blamed, value, e.getMessage());
      }
    }

    private static <T> void apply(String property, T value, Consumer<T> setter) {
      if (value == null) {
        return;
      }
      try {
        setter.accept(value);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(property, value, e.getMessage());
      }
    }
  }

  /** The ShedLock provider, made when ShedLock and leasehold-shedlock are on the class path. */
  public static class Shedlock {
    /** Whether to make a LockProvider bean. */
    private boolean enabled = true;

    /** What goes before each ShedLock lock name to make its lease name. */
    private String namePrefix = "shedlock/";

    /** The shortest TTL a short lockAtMostFor may shorten a lease to. */
    private Duration minimumTtl = Duration.ofSeconds(1);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getNamePrefix() {
      return namePrefix;
    }

    public void setNamePrefix(String namePrefix) {
      this.namePrefix = namePrefix;
    }

    public Duration getMinimumTtl() {
      return minimumTtl;
    }

    public void setMinimumTtl(Duration minimumTtl) {
      this.minimumTtl = minimumTtl;
    }
  }

  /** The lock registry, made when Spring Integration and leasehold-spring-integration are present. */
  public static class Integration {
    /** Whether to make a LockRegistry bean. */
    private boolean enabled = true;

    /** What goes before each lock key to make its lease name. */
    private String namePrefix = "";

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getNamePrefix() {
      return namePrefix;
    }

    public void setNamePrefix(String namePrefix) {
      this.namePrefix = namePrefix;
    }
  }

  /** One leader election, under leasehold.leader-election.ROLE. */
  public static class LeaderElection {
    /** The lease all instances contend for; default leader/ROLE. */
    private String leaseName;

    /** Whether the context starts contending at startup; when false, call start() on the bean. */
    private boolean autoStartup = true;

    public String getLeaseName() {
      return leaseName;
    }

    public void setLeaseName(String leaseName) {
      this.leaseName = leaseName;
    }

    public boolean isAutoStartup() {
      return autoStartup;
    }

    public void setAutoStartup(boolean autoStartup) {
      this.autoStartup = autoStartup;
    }
  }

  /** The health indicator (management.health.leasehold.enabled=false turns it off). */
  public static class Health {
    /** The lease name each health check reads from the store (it need not exist). */
    private String probeLease = "leasehold/health-probe";

    /** How long a health check waits for the store before it reports DOWN (1 ms to 1 min). */
    private Duration timeout = Duration.ofSeconds(2);

    public String getProbeLease() {
      return probeLease;
    }

    public void setProbeLease(String probeLease) {
      this.probeLease = probeLease;
    }

    public Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(Duration timeout) {
      this.timeout = timeout;
    }
  }
}
