package io.leasehold.pekko;

import io.leasehold.BackendUris;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.pekko.actor.AbstractExtensionId;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.ClassicActorSystemProvider;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Extension;
import org.apache.pekko.actor.ExtensionIdProvider;
import org.apache.pekko.event.Logging;
import org.apache.pekko.event.LoggingAdapter;

/**
 * The Leasehold side of one actor system: its backends (one per URI, opened on first use, closed
 * when the system terminates) and the {@link LeaseholdLease}s Pekko made in it, by lease name.
 *
 * <p>Closing happens after the actor system stopped every actor, so by then no singleton or shard
 * runs here: releasing the leases lets other nodes take over at once instead of after the TTL.
 * That is what coordinated shutdown does for Leasehold leases — its last phase terminates the
 * actor system.
 */
public final class LeaseholdPekko implements Extension {

  private static final Id ID = new Id();

  private final LoggingAdapter log;
  private final Function<String, LeaseBackend> opener;
  private final Map<String, LeaseBackend> backends = new ConcurrentHashMap<>();
  private final Map<String, LeaseholdLease> leases = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  private boolean terminated; // guarded by lock

  private LeaseholdPekko(ExtendedActorSystem system) {
    this.log = Logging.getLogger(system, LeaseholdPekko.class);
    this.opener =
        system.settings().setup().get(LeaseholdSetup.class)
            .map(LeaseholdSetup::opener)
            .orElse(LeaseBackend::open);
    system.registerOnTermination(this::closeAll);
  }

  /**
   * {@return the extension of {@code system}}
   *
   * @param system the actor system
   */
  public static LeaseholdPekko get(ActorSystem system) {
    return ID.get(system);
  }

  /**
   * {@return the extension of {@code system}}
   *
   * @param system the actor system, classic or typed
   */
  public static LeaseholdPekko get(ClassicActorSystemProvider system) {
    return ID.get(system);
  }

  /**
   * The lease that Pekko made in this actor system for {@code leaseName}, for what Pekko's
   * interface lacks: the fencing token, the time left, the Leasehold {@link Lease}. Cluster
   * Singleton names its lease {@code <system name>-singleton-<manager path>}, Cluster Sharding
   * {@code <system name>-shard-<type name>-<shard id>} for shards.
   *
   * @param leaseName the lease name Pekko used
   * @return the lease, if one was made here for that name
   */
  public Optional<LeaseholdLease> lease(String leaseName) {
    return Optional.ofNullable(leases.get(Objects.requireNonNull(leaseName, "leaseName")));
  }

  /** Makes the Leasehold lease for one Pekko lease, on the backend of its URI. */
  Lease newLease(PekkoLeaseConfig config) {
    return backend(config.backendUri()).newLease(config.settings());
  }

  void register(LeaseholdLease lease) {
    leases.putIfAbsent(lease.settings().leaseName(), lease);
  }

  private LeaseBackend backend(String uri) {
    synchronized (lock) {
      if (terminated) {
        throw new IllegalStateException(
            "the actor system has terminated; its Leasehold backends are closed");
      }
      LeaseBackend b = backends.get(uri);
      if (b == null) {
        try {
          b = Objects.requireNonNull(opener.apply(uri), "the backend opener returned null");
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(
              "'backend' = \"" + BackendUris.redacted(uri) + "\": " + e.getMessage(), e);
        }
        backends.put(uri, b);
        log.info("Leasehold backend {} opened", b.uri());
      }
      return b;
    }
  }

  /** Closes every backend: held leases are released (the store confirms, or the TTL ends them). */
  private void closeAll() {
    synchronized (lock) {
      terminated = true;
    }
    for (LeaseBackend b : backends.values()) {
      try {
        b.close();
      } catch (RuntimeException e) {
        log.warning("closing Leasehold backend {} failed: {}", b.uri(), e);
      }
    }
  }

  private static final class Id extends AbstractExtensionId<LeaseholdPekko>
      implements ExtensionIdProvider {
    @Override
    public LeaseholdPekko createExtension(ExtendedActorSystem system) {
      return new LeaseholdPekko(system);
    }

    @Override
    public Id lookup() {
      return this;
    }
  }
}
