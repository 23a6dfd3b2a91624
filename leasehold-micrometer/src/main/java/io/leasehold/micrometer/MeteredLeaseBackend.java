package io.leasehold.micrometer;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.Subscription;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.RenewalListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A {@link LeaseBackend} that measures the leases it makes, and the {@link MeterBinder} that
 * publishes those measurements: wrap the backend once, use the wrapper wherever the backend was
 * used, and bind it to a registry (Spring Boot binds every {@code MeterBinder} bean itself).
 *
 * <table>
 *   <caption>Meters (each tagged {@code backend}, the URI scheme)</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@code leasehold.lease.acquire}</td><td>timer</td><td>{@code outcome}: acquired,
 *       refused, unknown</td><td>{@code acquire()} calls and how long each took</td></tr>
 *   <tr><td>{@code leasehold.lease.lost}</td><td>counter</td><td>{@code kind}: expired,
 *       taken_over, revoked, inconsistent</td><td>unexpected losses ({@code onLost})</td></tr>
 *   <tr><td>{@code leasehold.lease.held}</td><td>gauge</td><td></td><td>leases held now
 *       ({@code checkAlive()} true)</td></tr>
 *   <tr><td>{@code leasehold.lease.remaining.min}</td><td>gauge, seconds</td><td></td><td>{@code
 *       remaining()} of the held lease closest to its safe deadline; NaN when none is held</td></tr>
 *   <tr><td>{@code leasehold.lease.renewal}</td><td>timer</td><td>{@code outcome}: renewed,
 *       failed</td><td>renewals and their round trips (leases of the engine in {@code
 *       leasehold-spi}, which every bundled backend uses)</td></tr>
 * </table>
 *
 * <p>Lease names are never tags, so the number of time series does not grow with the number of
 * leases. Closing this backend closes the one it wraps.
 */
public final class MeteredLeaseBackend implements LeaseBackend, MeterBinder {

  private final LeaseBackend backend;
  private final String scheme;
  private final Set<MeteredLease> open = ConcurrentHashMap.newKeySet();
  private final List<Meters> bound = new CopyOnWriteArrayList<>();

  private MeteredLeaseBackend(LeaseBackend backend) {
    this.backend = Objects.requireNonNull(backend, "backend");
    String uri = backend.uri();
    int colon = uri.indexOf(':');
    this.scheme = colon > 0 ? uri.substring(0, colon).toLowerCase(Locale.ROOT) : "unknown";
  }

  /**
   * Wraps a backend.
   *
   * @param backend the backend to measure; closing the wrapper closes it
   * @return the measuring backend
   */
  public static MeteredLeaseBackend of(LeaseBackend backend) {
    return new MeteredLeaseBackend(backend);
  }

  /** {@return the backend this one measures} */
  public LeaseBackend unwrap() {
    return backend;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    bound.add(new Meters(registry, Tags.of("backend", scheme)));
  }

  @Override
  public Lease newLease(LeaseSettings settings) {
    Lease inner = backend.newLease(settings);
    MeteredLease lease = new MeteredLease(inner);
    open.add(lease);
    inner.onLost(lease::lost);
    if (inner instanceof ManagedLease managed) {
      managed.onRenewal(lease);
    }
    return lease;
  }

  @Override
  public String uri() {
    return backend.uri();
  }

  /** The wrapped backend's observation: metering adds nothing to it. */
  @Override
  public io.leasehold.Subscription observe(String name, io.leasehold.LeaseObserver observer) {
    return backend.observe(name, observer);
  }

  /** The wrapped backend's read: metering adds nothing to it. */
  @Override
  public CompletableFuture<io.leasehold.LeaseState> read(String name) {
    return backend.read(name);
  }

  @Override
  public void close() {
    backend.close();
    open.clear();
  }

  @Override
  public String toString() {
    return "MeteredLeaseBackend[" + backend + ']';
  }

  private double held() {
    int n = 0;
    for (MeteredLease l : open) {
      if (l.inner.checkAlive()) {
        n++;
      }
    }
    return n;
  }

  private double minRemainingSeconds() {
    long min = Long.MAX_VALUE;
    for (MeteredLease l : open) {
      if (l.inner.checkAlive()) {
        min = Math.min(min, l.inner.remaining().toNanos());
      }
    }
    return min == Long.MAX_VALUE ? Double.NaN : min / 1e9;
  }

  /** The meters of one registry. */
  private final class Meters {
    final Timer acquired;
    final Timer refused;
    final Timer unknown;
    final Timer renewed;
    final Timer renewalFailed;
    final Map<LeaseLost.Kind, Counter> lost = new EnumMap<>(LeaseLost.Kind.class);

    Meters(MeterRegistry registry, Tags tags) {
      acquired = acquireTimer(registry, tags, "acquired");
      refused = acquireTimer(registry, tags, "refused");
      unknown = acquireTimer(registry, tags, "unknown");
      renewed = renewalTimer(registry, tags, "renewed");
      renewalFailed = renewalTimer(registry, tags, "failed");
      for (LeaseLost.Kind kind : LeaseLost.Kind.values()) {
        lost.put(
            kind,
            Counter.builder("leasehold.lease.lost")
                .description("Leases lost unexpectedly, by why")
                .tags(tags)
                .tag("kind", kind.name().toLowerCase(Locale.ROOT))
                .register(registry));
      }
      Gauge.builder("leasehold.lease.held", MeteredLeaseBackend.this, MeteredLeaseBackend::held)
          .description("Leases held now")
          .tags(tags)
          .register(registry);
      Gauge.builder(
              "leasehold.lease.remaining.min", MeteredLeaseBackend.this, MeteredLeaseBackend::minRemainingSeconds)
          .description("Time left until the safe deadline of the held lease closest to it")
          .baseUnit("seconds")
          .tags(tags)
          .register(registry);
    }

    private Timer acquireTimer(MeterRegistry registry, Tags tags, String outcome) {
      return Timer.builder("leasehold.lease.acquire")
          .description("acquire() calls by outcome: acquired, refused (held elsewhere), unknown (store unreachable)")
          .tags(tags)
          .tag("outcome", outcome)
          .register(registry);
    }

    private Timer renewalTimer(MeterRegistry registry, Tags tags, String outcome) {
      return Timer.builder("leasehold.lease.renewal")
          .description("Renewal round trips by outcome: renewed, failed (retried until the safe deadline)")
          .tags(tags)
          .tag("outcome", outcome)
          .register(registry);
    }
  }

  /** A lease that reports what happens to it; everything else goes to the backend's lease. */
  private final class MeteredLease implements Lease, RenewalListener {
    final Lease inner;

    MeteredLease(Lease inner) {
      this.inner = inner;
    }

    @Override
    public CompletableFuture<Boolean> acquire() {
      long start = System.nanoTime();
      return inner.acquire()
          .whenComplete(
              (granted, error) -> {
                long took = System.nanoTime() - start;
                for (Meters m : bound) {
                  Timer t = error != null ? m.unknown : granted ? m.acquired : m.refused;
                  t.record(took, TimeUnit.NANOSECONDS);
                }
              });
    }

    void lost(LeaseLost reason) {
      for (Meters m : bound) {
        m.lost.get(reason.kind()).increment();
      }
    }

    @Override
    public void renewed(long latencyNanos) {
      for (Meters m : bound) {
        m.renewed.record(latencyNanos, TimeUnit.NANOSECONDS);
      }
    }

    @Override
    public void renewalFailed(long latencyNanos, Throwable cause) {
      for (Meters m : bound) {
        m.renewalFailed.record(latencyNanos, TimeUnit.NANOSECONDS);
      }
    }

    @Override
    public String name() {
      return inner.name();
    }

    @Override
    public String owner() {
      return inner.owner();
    }

    @Override
    public HolderId holder() {
      return inner.holder();
    }

    @Override
    public LeaseSettings settings() {
      return inner.settings();
    }

    @Override
    public CompletableFuture<Void> release() {
      return inner.release();
    }

    @Override
    public boolean checkAlive() {
      return inner.checkAlive();
    }

    @Override
    public Duration remaining() {
      return inner.remaining();
    }

    @Override
    public OptionalLong fencingToken() {
      return inner.fencingToken();
    }

    @Override
    public Optional<String> lastKnownHolder() {
      return inner.lastKnownHolder();
    }

    @Override
    public Subscription onLost(Consumer<LeaseLost> handler) {
      return inner.onLost(handler);
    }

    @Override
    public void close() {
      inner.close();
      open.remove(this);
    }

    @Override
    public String toString() {
      return inner.toString();
    }
  }
}
