package io.leasehold.client;

import io.leasehold.HolderId;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseHolding;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.OpenObservations;
import io.leasehold.spi.OpenLeases;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The {@code leasehold://} backend: the Lease contract on the consistent core. All leases of one
 * backend share one connection, one session per TTL and one keep-alive stream; the core's leader
 * measures each session's TTL from the last keep-alive it confirmed, and a holder's local safe
 * deadline counts from when that keep-alive was sent. A session that may carry a key no holder
 * believes in is retired: kept alive only while tenures the engine believes in are on it (see
 * {@link Sessions}).
 */
public final class CoreBackend implements LeaseBackend {

  /** How often a backend asks the cluster for its members (a few bytes each time). */
  static final Duration MEMBERS_EVERY = Duration.ofSeconds(10);

  private final String uri;
  private final CoreClient client;
  private final LeaseRuntime runtime;
  private final OpenLeases leases;
  private final Sessions sessions;
  private final LeaseWatch watch;
  private final CoreLeaseStore store;
  private final OpenObservations observations = new OpenObservations();
  private volatile boolean closed;

  CoreBackend(String uri, List<InetSocketAddress> endpoints, Duration attemptTimeout, LeaseRuntime runtime) {
    this(uri, endpoints, attemptTimeout, runtime, List.of());
  }

  /** With extra interceptors on the client's channels (tests lose replies with them). */
  CoreBackend(
      String uri,
      List<InetSocketAddress> endpoints,
      Duration attemptTimeout,
      LeaseRuntime runtime,
      List<io.grpc.ClientInterceptor> interceptors) {
    this(uri, new CoreTarget(endpoints, null), attemptTimeout, runtime, interceptors);
  }

  /** On the nodes of a target, over TLS if it says so. */
  CoreBackend(
      String uri,
      CoreTarget target,
      Duration attemptTimeout,
      LeaseRuntime runtime,
      List<io.grpc.ClientInterceptor> interceptors) {
    this.uri = uri;
    this.client = new CoreClient(target.endpoints(), attemptTimeout, interceptors, target.tls());
    // Nodes added or removed by `leasehold admin` are used and dropped without a restart.
    client.followMembers(MEMBERS_EVERY);
    this.runtime = runtime;
    this.leases = new OpenLeases(uri);
    this.sessions =
        new Sessions(
            client,
            runtime.ticker(),
            runtime.timers(),
            processName(),
            attemptTimeout,
            this::sessionGranted,
            this::sessionEnded,
            this::tenureRevoked);
    this.watch = new LeaseWatch(client, runtime.timers(), new Losses(), sessions::liveIds);
    this.store = new CoreLeaseStore(client, sessions, watch);
  }

  /**
   * Opens a backend on the given nodes with its own timer and callback threads.
   *
   * @param uri the URI it was opened with, for messages
   * @param target the nodes' client addresses, and TLS if the URI asks for it
   * @return the backend
   */
  static CoreBackend open(String uri, CoreTarget target) {
    return new CoreBackend(uri, target, Duration.ofSeconds(2), LeaseRuntime.system("leasehold-core"), List.of());
  }

  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    if (settings.ttl().compareTo(Duration.ofMillis(10)) < 0) {
      throw new IllegalArgumentException(
          "ttl must be at least 10 ms on the core backend; was " + settings.ttl().toMillis() + " ms");
    }
    Lease lease = leases.newLease(settings, store, runtime);
    // Grant the session for this TTL now, so that the first acquire is one round trip. A failure
    // here is harmless: the acquire grants again and reports what goes wrong.
    sessions.forTtl(settings.ttl());
    return lease;
  }

  /**
   * {@inheritDoc}
   *
   * <p>On the core: a linearizable read of the lease's key, then a watch of it from the next
   * revision, resumed from the last delivered revision after a reconnect (on another node if
   * need be). Expiry is the core leader's decision, applied through the log, so {@code EXPIRED}
   * comes after the holder's safe deadline. The core records no wall-clock time, so {@link
   * LeaseHolding#since()} is empty.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed) {
      throw new IllegalStateException("backend " + uri + " is closed; open a new one to observe");
    }
    return observations.open(
        name, observer, runtime.callbacks(), observation ->
            new LeaseObservation(client, runtime.timers(), observation));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On the core: linearizable reads, the attached keys first (in pages of at most about 1 MiB,
   * each at its own revision), then the lease's key; only keys created after the tenure began
   * count (a tenure alive at the last read was alive when they were created, and keys of an
   * earlier tenure were deleted with it). Attached keys that fill more than one page are each
   * as of their page's read, not all of one instant.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed) {
      throw new IllegalStateException("backend " + uri + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    String attachedPrefix = CoreLeaseStore.ATTACHED_PREFIX + name + "/";
    GetRequest lease = GetRequest.newBuilder().setKey(CoreClient.LEASE_PREFIX + name).build();
    return PrefixPages.readAll(client, attachedPrefix)
        .thenCompose(
            keys ->
                client
                    .<GetResponse>call((stub, out) -> stub.get(lease, out))
                    .thenApply(
                        record -> {
                          if (record.getKvsCount() == 0) {
                            return new LeaseState(name, Optional.empty(), Map.of());
                          }
                          LeaseHolding holding = LeaseObservation.holding(record.getKvs(0));
                          Map<String, String> values = new HashMap<>();
                          for (KeyValue kv : keys) {
                            String key = kv.getKey().substring(attachedPrefix.length());
                            if (kv.getCreateRevision() > holding.token() && key.indexOf('/') < 0) {
                              values.put(key, kv.getValue().toStringUtf8());
                            }
                          }
                          return new LeaseState(name, Optional.of(holding), values);
                        }));
  }

  @Override
  public String uri() {
    return uri;
  }

  /** {@return the watch on this backend's lease keys (tests look at its resyncs)} */
  LeaseWatch leaseWatch() {
    return watch;
  }

  /** {@return the client, for tools that use the core's keys and sessions directly} */
  public CoreClient client() {
    return client;
  }

  /**
   * Releases every lease (waiting at most each lease's operation timeout), revokes this backend's
   * sessions (waiting at most one second), then disconnects.
   */
  @Override
  public void close() {
    closed = true;
    observations.closeAll();
    leases.closeAll();
    watch.close();
    sessions.revokeAll(Duration.ofSeconds(1));
    sessions.close();
    client.close();
    runtime.close();
  }

  /** Disconnects at once without releasing anything, as a crashed process would. */
  void abandon() {
    watch.close();
    sessions.close();
    client.close();
  }

  private void sessionGranted() {
    watch.sessionsChanged();
  }

  private void sessionEnded(long sessionId, LeaseLost why) {
    store.sessionEnded(sessionId, (token, h) -> report(h.holder(), token, why));
  }

  private void tenureRevoked(io.leasehold.core.proto.RevokedTenure revoked) {
    store.revoked(
        revoked,
        (token, h) ->
            report(
                h.holder(),
                token,
                new LeaseLost(
                    LeaseLost.Kind.REVOKED,
                    "an operator revoked tenure " + token + " of lease '" + h.leaseName()
                        + "' in the core (its keep-alive said so)")));
  }

  private void report(HolderId holder, long token, LeaseLost reason) {
    leases.find(holder).ifPresent(l -> l.storeReportedLoss(token, reason));
  }

  private final class Losses implements LeaseWatch.Losses {
    @Override
    public void lost(HolderId holder, String leaseName, long token, LeaseLost reason) {
      store.forget(token);
      report(holder, token, reason);
    }

    @Override
    public void resync(PrefixPages.Page page) {
      store.missingFrom(
          page,
          (token, h) -> report(h.holder(), token, new LeaseLost(LeaseLost.Kind.REVOKED, "the lease's key is gone from the core")));
    }
  }

  private static String processName() {
    return ProcessHandle.current().pid() + "@" + hostName();
  }

  private static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException e) {
      return "unknown-host";
    }
  }

  @Override
  public String toString() {
    return "CoreBackend[" + uri + "]";
  }
}
