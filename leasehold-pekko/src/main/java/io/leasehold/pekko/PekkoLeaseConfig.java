package io.leasehold.pekko;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import org.apache.pekko.coordination.lease.TimeoutSettings;

/**
 * One Pekko lease configuration block read into a Leasehold backend URI and {@link LeaseSettings}.
 *
 * <p>Pekko parses {@code heartbeat-timeout}, {@code heartbeat-interval} and {@code
 * lease-operation-timeout} itself (into {@link TimeoutSettings}, before the lease class is made);
 * they become Leasehold's {@code ttl}, {@code heartbeatInterval} and {@code operationTimeout}. The
 * other keys are Leasehold's own. Every error names the key, the value and where it was set.
 *
 * @param backendUri the Leasehold backend URI ({@code backend})
 * @param settings the lease's Leasehold settings
 */
record PekkoLeaseConfig(String backendUri, LeaseSettings settings) {

  static final String BACKEND = "backend";
  static final String HEARTBEAT_TIMEOUT = "heartbeat-timeout";
  static final String HEARTBEAT_INTERVAL = "heartbeat-interval";
  static final String OPERATION_TIMEOUT = "lease-operation-timeout";
  static final String ACQUIRE_RETRIES = "acquire-retries";
  static final String RETRY_INTERVAL = "retry-interval";
  static final String MAX_CLOCK_DRIFT = "max-clock-drift";
  static final String SAFETY_MARGIN = "safety-margin";

  PekkoLeaseConfig {
    Objects.requireNonNull(backendUri, "backendUri");
    Objects.requireNonNull(settings, "settings");
  }

  /**
   * Reads Pekko's lease settings.
   *
   * @param pekko what Pekko's {@code LeaseProvider} passes to the lease class
   * @return the backend URI and Leasehold settings
   * @throws IllegalArgumentException naming the key, its value and the allowed range when a value
   *     is missing, malformed or out of range
   */
  static PekkoLeaseConfig from(org.apache.pekko.coordination.lease.LeaseSettings pekko) {
    Config c = pekko.leaseConfig();
    String lease = pekko.leaseName();
    try {
      String backend = c.hasPath(BACKEND) ? c.getString(BACKEND).trim() : "";
      if (backend.isEmpty()) {
        throw new IllegalArgumentException(
            where(c, BACKEND) + "'" + BACKEND + "' is required: the Leasehold backend URI, such as"
                + " memory:, leasehold://host:port[,host:port], etcd://host:2379[,host:2379],"
                + " zookeeper://host:2181[,host:2181] or kubernetes:[?namespace=ns]");
      }
      LeaseSettings.Builder b;
      try {
        b = LeaseSettings.builder(lease, pekko.ownerName());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "the lease name or owner name that Pekko passed is not a valid Leasehold name: "
                + e.getMessage(), e);
      }
      TimeoutSettings t = pekko.timeoutSettings();
      Duration ttl = t.getHeartbeatTimeout();
      Duration heartbeat = t.getHeartbeatInterval();
      set(c, HEARTBEAT_TIMEOUT, ttl, () -> b.ttl(ttl));
      set(c, HEARTBEAT_INTERVAL, heartbeat, () -> b.heartbeatInterval(heartbeat));
      Duration operation = t.getOperationTimeout();
      set(c, OPERATION_TIMEOUT, operation, () -> b.operationTimeout(operation));
      optional(c, ACQUIRE_RETRIES, ConfigValueType.NUMBER, v -> b.acquireRetries(c.getInt(ACQUIRE_RETRIES)));
      optional(c, RETRY_INTERVAL, ConfigValueType.STRING, v -> b.retryInterval(c.getDuration(RETRY_INTERVAL)));
      optional(c, MAX_CLOCK_DRIFT, ConfigValueType.NUMBER, v -> b.maxClockDrift(c.getDouble(MAX_CLOCK_DRIFT)));
      optional(c, SAFETY_MARGIN, ConfigValueType.STRING, v -> b.safetyMargin(c.getDuration(SAFETY_MARGIN)));
      LeaseSettings settings;
      try {
        settings = b.build();
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(fitMessage(c, e.getMessage()), e);
      }
      return new PekkoLeaseConfig(backend, settings);
    } catch (IllegalArgumentException | ConfigException e) {
      throw new IllegalArgumentException(
          "Leasehold lease '" + lease + "' (lease-class io.leasehold.pekko.LeaseholdLease): "
              + e.getMessage(), e);
    }
  }

  /** Sets one value through the builder; a range error names the key instead of the field. */
  private static void set(Config c, String key, Object value, Runnable setter) {
    try {
      setter.run();
    } catch (IllegalArgumentException e) {
      // Show the value as it was written (2h), not as Pekko parsed it.
      Object shown = c.hasPath(key) ? c.getValue(key).render() : value;
      throw new IllegalArgumentException(
          where(c, key) + "'" + key + "' = " + shown + " is out of range: " + e.getMessage(), e);
    }
  }

  /**
   * An optional Leasehold key: absent or {@code ""} keeps Leasehold's default; otherwise the value
   * must parse and be in range.
   */
  private static void optional(
      Config c, String key, ConfigValueType expected, Consumer<ConfigValue> setter) {
    if (!c.hasPath(key)) {
      return;
    }
    ConfigValue v = c.getValue(key);
    if (v.valueType() == ConfigValueType.STRING && ((String) v.unwrapped()).isBlank()) {
      return;
    }
    try {
      setter.accept(v);
    } catch (ConfigException e) {
      throw new IllegalArgumentException(
          where(c, key) + "'" + key + "' = " + v.render() + " is not a "
              + (expected == ConfigValueType.NUMBER ? "number" : "duration such as 500ms or 2s")
              + " (" + e.getMessage() + ")", e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          where(c, key) + "'" + key + "' = " + v.render() + " is out of range: " + e.getMessage(), e);
    }
  }

  /**
   * The settings' cross-checks name Leasehold's fields; say which keys those are, so the message
   * leads to the line to change.
   */
  private static String fitMessage(Config c, String message) {
    String key =
        message.startsWith("heartbeatInterval")
            ? HEARTBEAT_INTERVAL
            : message.startsWith("safetyMargin") ? SAFETY_MARGIN : HEARTBEAT_TIMEOUT;
    return where(c, key) + "'" + key + "' does not fit with the other timings: " + message
        + " (in this block ttl is '" + HEARTBEAT_TIMEOUT + "', heartbeatInterval '"
        + HEARTBEAT_INTERVAL + "', safetyMargin '" + SAFETY_MARGIN + "', maxClockDrift '"
        + MAX_CLOCK_DRIFT + "')";
  }

  /** Where a key was set, as the config library describes it (file and line), for the message. */
  private static String where(Config c, String key) {
    if (!c.hasPath(key)) {
      return "";
    }
    return "[" + c.getValue(key).origin().description() + "] ";
  }
}
