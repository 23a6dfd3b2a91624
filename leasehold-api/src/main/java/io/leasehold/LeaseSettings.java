package io.leasehold;

import java.time.Duration;
import java.util.Objects;

/**
 * Immutable settings of one {@link Lease}, made with {@link #builder(String, String)}.
 *
 * <p>Every setter checks its own value and {@link Builder#build()} checks how the values fit
 * together, so a settings object that exists is valid. A bad value fails with an
 * {@link IllegalArgumentException} that names the field, the allowed range and the value given. A
 * backend may reject settings beyond its own limits (a name too long for its store, a TTL below
 * its floor) when a lease is made, with the same kind of message.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>allowed</th></tr>
 *   <tr><td>{@link #name() name}</td><td>required</td><td>1–256 characters, no control characters,
 *       no leading or trailing white space</td></tr>
 *   <tr><td>{@link #owner() owner}</td><td>required</td><td>as name</td></tr>
 *   <tr><td>{@link #ttl() ttl}</td><td>15 s</td><td>1 ms – 24 h</td></tr>
 *   <tr><td>{@link #heartbeatInterval() heartbeatInterval}</td><td>ttl / 3</td><td>above 0 and
 *       below the {@linkplain #safeWindow() safe window}</td></tr>
 *   <tr><td>{@link #acquireRetries() acquireRetries}</td><td>2</td><td>0 – 100</td></tr>
 *   <tr><td>{@link #retryInterval() retryInterval}</td><td>ttl / 10, at most 500 ms</td>
 *       <td>1 ms – 1 h</td></tr>
 *   <tr><td>{@link #operationTimeout() operationTimeout}</td><td>heartbeatInterval / 2, at
 *       most 5 s</td><td>1 ms – 1 h</td></tr>
 *   <tr><td>{@link #maxClockDrift() maxClockDrift}</td><td>0.01</td><td>0 – 0.5, 0.5
 *       excluded</td></tr>
 *   <tr><td>{@link #safetyMargin() safetyMargin}</td><td>ttl / 10</td><td>0 up to
 *       ttl × (1 − maxClockDrift), excluded</td></tr>
 * </table>
 */
public final class LeaseSettings {

  static final Duration MIN_TTL = Duration.ofMillis(1);
  static final Duration MAX_TTL = Duration.ofHours(24);
  static final Duration MIN_INTERVAL = Duration.ofMillis(1);
  static final Duration MAX_INTERVAL = Duration.ofHours(1);
  static final int MAX_ACQUIRE_RETRIES = 100;
  static final double MAX_CLOCK_DRIFT = 0.5;

  private static final Duration DEFAULT_TTL = Duration.ofSeconds(15);
  private static final int DEFAULT_ACQUIRE_RETRIES = 2;
  private static final Duration DEFAULT_MAX_RETRY_INTERVAL = Duration.ofMillis(500);
  private static final Duration DEFAULT_MAX_OPERATION_TIMEOUT = Duration.ofSeconds(5);
  private static final double DEFAULT_MAX_CLOCK_DRIFT = 0.01;

  private final String name;
  private final String owner;
  private final Duration ttl;
  private final Duration heartbeatInterval;
  private final int acquireRetries;
  private final Duration retryInterval;
  private final Duration operationTimeout;
  private final double maxClockDrift;
  private final Duration safetyMargin;
  private final Duration safeWindow;

  /** Made by {@link Builder#build()} only, with the defaults it computed and checked. */
  private LeaseSettings(Builder b, Duration safetyMargin, Duration heartbeatInterval) {
    this.name = b.name;
    this.owner = b.owner;
    this.ttl = b.ttl;
    this.maxClockDrift = b.maxClockDrift;
    this.safetyMargin = safetyMargin;
    this.safeWindow = safeWindow(ttl, maxClockDrift, safetyMargin);
    this.heartbeatInterval = heartbeatInterval;
    this.acquireRetries = b.acquireRetries;
    this.retryInterval =
        b.retryInterval != null
            ? b.retryInterval
            : atLeast(MIN_INTERVAL, min(b.ttl.dividedBy(10), DEFAULT_MAX_RETRY_INTERVAL));
    this.operationTimeout =
        b.operationTimeout != null
            ? b.operationTimeout
            : atLeast(
                MIN_INTERVAL, min(heartbeatInterval.dividedBy(2), DEFAULT_MAX_OPERATION_TIMEOUT));
  }

  /**
   * Starts settings for the lease {@code name}, held as {@code owner}.
   *
   * @param name the lease name: which resource the lease guards
   * @param owner the application's name for this holder, for example the host or pod name
   * @return a builder with every other setting at its default
   * @throws IllegalArgumentException if a name breaks the naming rule
   */
  public static Builder builder(String name, String owner) {
    return new Builder(name, owner);
  }

  /** {@return a builder that starts from these settings} */
  public Builder toBuilder() {
    Builder b = new Builder(name, owner);
    b.ttl = ttl;
    b.heartbeatInterval = heartbeatInterval;
    b.acquireRetries = acquireRetries;
    b.retryInterval = retryInterval;
    b.operationTimeout = operationTimeout;
    b.maxClockDrift = maxClockDrift;
    b.safetyMargin = safetyMargin;
    return b;
  }

  /** {@return the lease name} */
  public String name() {
    return name;
  }

  /** {@return the owner name; with a random incarnation it forms the {@link HolderId}} */
  public String owner() {
    return owner;
  }

  /** {@return how long the store keeps the lease after the last renewal it received} */
  public Duration ttl() {
    return ttl;
  }

  /** {@return how often the holder renews while it holds the lease} */
  public Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  /**
   * {@return how many more attempts {@link Lease#acquire()} makes, {@linkplain #retryInterval()
   * retryInterval} apart, when the lease is held elsewhere or the store does not answer} A refusal
   * (a {@link LeaseProtocolException}: no right on the name, a request the store calls invalid, a
   * quota) is not retried: every retry would be refused alike.
   */
  public int acquireRetries() {
    return acquireRetries;
  }

  /** {@return the pause between acquire attempts and between renewal attempts after a failure} */
  public Duration retryInterval() {
    return retryInterval;
  }

  /**
   * {@return how long one store operation may take before it counts as failed with outcome
   * unknown}
   */
  public Duration operationTimeout() {
    return operationTimeout;
  }

  /**
   * {@return the largest relative difference in rate between the holder's clock and the store's
   * clock that the lease stays safe under} 0.01 means the clocks may disagree by 1% about how long
   * an interval lasted. It is about the rate at which clocks tick, never their absolute values.
   */
  public double maxClockDrift() {
    return maxClockDrift;
  }

  /**
   * {@return the time the holder keeps in hand at the end of each tenure} It stops this long
   * before its clock says the store could hand the lease on, which covers the delay before
   * {@link Lease#onLost} handlers run and the time they need to stop work.
   */
  public Duration safetyMargin() {
    return safetyMargin;
  }

  /**
   * {@return how long after sending a renewal that succeeds the holder may act on the lease}
   * That is {@code ttl × (1 − maxClockDrift) − safetyMargin}. The local safe deadline is the send
   * time of the last successful renewal plus this window.
   */
  public Duration safeWindow() {
    return safeWindow;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof LeaseSettings)) {
      return false;
    }
    LeaseSettings s = (LeaseSettings) o;
    return name.equals(s.name)
        && owner.equals(s.owner)
        && ttl.equals(s.ttl)
        && heartbeatInterval.equals(s.heartbeatInterval)
        && acquireRetries == s.acquireRetries
        && retryInterval.equals(s.retryInterval)
        && operationTimeout.equals(s.operationTimeout)
        && Double.compare(maxClockDrift, s.maxClockDrift) == 0
        && safetyMargin.equals(s.safetyMargin);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        name,
        owner,
        ttl,
        heartbeatInterval,
        acquireRetries,
        retryInterval,
        operationTimeout,
        maxClockDrift,
        safetyMargin);
  }

  @Override
  public String toString() {
    return "LeaseSettings{name='" + name + "', owner='" + owner + "', ttl=" + ttl
        + ", heartbeatInterval=" + heartbeatInterval + ", acquireRetries=" + acquireRetries
        + ", retryInterval=" + retryInterval + ", operationTimeout=" + operationTimeout
        + ", maxClockDrift=" + maxClockDrift + ", safetyMargin=" + safetyMargin
        + ", safeWindow=" + safeWindow + '}';
  }

  private static Duration safeWindow(Duration ttl, double drift, Duration margin) {
    long driftAdjusted = (long) Math.floor(ttl.toNanos() * (1.0 - drift));
    return Duration.ofNanos(driftAdjusted).minus(margin);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  private static Duration atLeast(Duration floor, Duration d) {
    return d.compareTo(floor) >= 0 ? d : floor;
  }

  /**
   * Builds {@link LeaseSettings}. Setters fail fast on a value outside the field's own range;
   * {@link #build()} checks how the values fit together. Not thread-safe.
   */
  public static final class Builder {
    private final String name;
    private final String owner;
    private Duration ttl = DEFAULT_TTL;
    private Duration heartbeatInterval;
    private int acquireRetries = DEFAULT_ACQUIRE_RETRIES;
    private Duration retryInterval;
    private Duration operationTimeout;
    private double maxClockDrift = DEFAULT_MAX_CLOCK_DRIFT;
    private Duration safetyMargin;

    private Builder(String name, String owner) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(owner, "owner");
      Names.check("name", name);
      Names.check("owner", owner);
      this.name = name;
      this.owner = owner;
    }

    /**
     * How long the store keeps the lease after the last renewal it received; default 15 s.
     *
     * @param ttl between 1 ms and 24 h
     * @return this builder
     */
    public Builder ttl(Duration ttl) {
      this.ttl = inRange("ttl", ttl, MIN_TTL, MAX_TTL);
      return this;
    }

    /**
     * How often to renew; default ttl / 3.
     *
     * @param heartbeatInterval above 0 and below the safe window (checked by {@link #build()})
     * @return this builder
     */
    public Builder heartbeatInterval(Duration heartbeatInterval) {
      Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
      if (heartbeatInterval.isNegative() || heartbeatInterval.isZero()) {
        throw new IllegalArgumentException(
            "heartbeatInterval must be above 0 and below the safe window"
                + " ttl × (1 − maxClockDrift) − safetyMargin; was "
                + Format.duration(heartbeatInterval));
      }
      this.heartbeatInterval = heartbeatInterval;
      return this;
    }

    /**
     * Further acquire attempts before {@link Lease#acquire()} gives its answer; default 2.
     *
     * @param acquireRetries between 0 and 100
     * @return this builder
     */
    public Builder acquireRetries(int acquireRetries) {
      if (acquireRetries < 0 || acquireRetries > MAX_ACQUIRE_RETRIES) {
        throw new IllegalArgumentException(
            "acquireRetries must be between 0 and " + MAX_ACQUIRE_RETRIES + "; was "
                + acquireRetries);
      }
      this.acquireRetries = acquireRetries;
      return this;
    }

    /**
     * Pause between attempts; default ttl / 10, at most 500 ms.
     *
     * @param retryInterval between 1 ms and 1 h
     * @return this builder
     */
    public Builder retryInterval(Duration retryInterval) {
      this.retryInterval = inRange("retryInterval", retryInterval, MIN_INTERVAL, MAX_INTERVAL);
      return this;
    }

    /**
     * How long one store operation may take; default half the heartbeat interval, at most 5 s,
     * so that several renewal attempts fit in the safe window after a missed heartbeat.
     *
     * @param operationTimeout between 1 ms and 1 h
     * @return this builder
     */
    public Builder operationTimeout(Duration operationTimeout) {
      this.operationTimeout =
          inRange("operationTimeout", operationTimeout, MIN_INTERVAL, MAX_INTERVAL);
      return this;
    }

    /**
     * Largest relative clock-rate difference to stay safe under; default 0.01.
     *
     * @param maxClockDrift at least 0 and below 0.5
     * @return this builder
     */
    public Builder maxClockDrift(double maxClockDrift) {
      if (!(maxClockDrift >= 0.0 && maxClockDrift < MAX_CLOCK_DRIFT)) {
        throw new IllegalArgumentException(
            "maxClockDrift must be at least 0 and below " + MAX_CLOCK_DRIFT + "; was "
                + maxClockDrift);
      }
      this.maxClockDrift = maxClockDrift;
      return this;
    }

    /**
     * Time kept in hand at the end of each tenure; default ttl / 10.
     *
     * @param safetyMargin at least 0 and below ttl × (1 − maxClockDrift) (checked by
     *     {@link #build()})
     * @return this builder
     */
    public Builder safetyMargin(Duration safetyMargin) {
      Objects.requireNonNull(safetyMargin, "safetyMargin");
      if (safetyMargin.isNegative()) {
        throw new IllegalArgumentException(
            "safetyMargin must be at least 0 and below ttl × (1 − maxClockDrift); was "
                + Format.duration(safetyMargin));
      }
      this.safetyMargin = safetyMargin;
      return this;
    }

    /**
     * Checks how the values fit together and makes the settings.
     *
     * @return the settings
     * @throws IllegalArgumentException if the safe window is empty or the heartbeat interval does
     *     not fit in it
     */
    public LeaseSettings build() {
      // The two defaults that the checks below depend on, computed once and handed on.
      Duration margin = safetyMargin != null ? safetyMargin : ttl.dividedBy(10);
      Duration window = safeWindow(ttl, maxClockDrift, margin);
      if (window.isNegative() || window.isZero()) {
        throw new IllegalArgumentException(
            "safetyMargin must be below ttl × (1 − maxClockDrift) = "
                + Format.duration(safeWindow(ttl, maxClockDrift, Duration.ZERO))
                + " so that the safe window is not empty; was " + Format.duration(margin)
                + " with ttl " + Format.duration(ttl) + " and maxClockDrift " + maxClockDrift);
      }
      Duration heartbeat = heartbeatInterval != null ? heartbeatInterval : ttl.dividedBy(3);
      if (heartbeat.isZero() || heartbeat.compareTo(window) >= 0) {
        throw new IllegalArgumentException(
            "heartbeatInterval must be above 0 and below the safe window"
                + " ttl × (1 − maxClockDrift) − safetyMargin = " + Format.duration(window)
                + "; was " + Format.duration(heartbeat)
                + (heartbeatInterval == null ? " (the default, ttl / 3)" : ""));
      }
      return new LeaseSettings(this, margin, heartbeat);
    }

    private static Duration inRange(String field, Duration value, Duration min, Duration max) {
      Objects.requireNonNull(value, field);
      if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new IllegalArgumentException(
            field + " must be between " + Format.duration(min) + " and " + Format.duration(max)
                + "; was " + Format.duration(value));
      }
      return value;
    }
  }
}
