package io.leasehold.zookeeper;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.spi.OpenObservations;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.OpenLeases;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code zookeeper://} backend: one ZooKeeper session (kept by Apache Curator) for every lease
 * of this backend, an ephemeral holder node per held lease, the node's czxid as the fencing token.
 *
 * <p><b>Session timeout and TTL.</b> The session is the heartbeat of all leases, so the ensemble
 * keeps a lease for one session timeout after it last heard from this backend, whatever the
 * lease's TTL says. A lease's TTL must therefore be at most the session timeout (the {@code
 * sessionTimeout} URI parameter, 15 s by default, and what the ensemble actually granted): a lease
 * with a longer TTL is refused when it is made, or when it is acquired if the servers' {@code
 * maxSessionTimeout} cut the session timeout down. On a single server, set the TTL equal to the
 * session timeout: a shorter TTL is safe, but a crashed holder's lease is freed only after the
 * session timeout. On an ensemble a follower tells the leader of its sessions' activity only on
 * its pings, so give the session timeout a heartbeat interval and a tick more than the TTL (see
 * {@code docs/zookeeper.md}).
 *
 * <p>An operator's delete of a holder node frees the name only once the holder has stopped: the
 * lease node keeps the tenure's record (holder, session, TTL) until a release or the holder's
 * confirmation, and contenders wait for that, for the session's end, or for one TTL.
 *
 * <p>Opening waits up to one session timeout for the first connection, so that the first acquire
 * does not race the session's set-up; if the ensemble cannot be reached by then, it returns
 * anyway and keeps trying, and acquires fail until it is connected.
 *
 * <p>Open it with {@link LeaseBackend#open(String)}: {@code
 * zookeeper://host:2181[,host:2181...][/chroot][?sessionTimeout=15s]}. Leases live under {@code
 * /leasehold/leases} below the chroot.
 *
 * <p><b>Security.</b> {@code ca=FILE} (and {@code cert=FILE&key=FILE}, PEM) connects over TLS to
 * the servers' secure client port, configured on this backend's own {@code ZKClientConfig}, never
 * through JVM system properties; host names are verified. {@code user=NAME&password-file=FILE}
 * authenticates with ZooKeeper's digest scheme on every connection and creates every znode with
 * {@code CREATOR_ALL_ACL}, so that clients without the credentials can neither delete a holder's
 * node nor create one under a lease; without {@code user} the znodes are open, as before. See
 * {@code docs/zookeeper.md}.
 */
public final class ZooKeeperBackend implements LeaseBackend {

  private static final Logger log = LoggerFactory.getLogger(ZooKeeperBackend.class);

  private final ZooKeeperUri uri;
  private final ZooKeeperSecurity security;
  private final CuratorFramework client;
  private final LeaseRuntime runtime;
  private final boolean ownsRuntime;
  private final OpenLeases leases;
  private final ZooKeeperLeaseStore store;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final OpenObservations observations = new OpenObservations();

  private ZooKeeperBackend(ZooKeeperUri uri, LeaseRuntime runtime, boolean ownsRuntime) {
    this.uri = uri;
    this.runtime = runtime;
    this.ownsRuntime = ownsRuntime;
    this.leases = new OpenLeases(uri.toString());
    int sessionMillis = (int) Math.min(Integer.MAX_VALUE, uri.sessionTimeout().toMillis());
    // Files are read and checked before anything connects.
    this.security = ZooKeeperSecurity.load(uri);
    CuratorFrameworkFactory.Builder builder =
        CuratorFrameworkFactory.builder()
            .connectString(uri.connectString())
            .sessionTimeoutMs(sessionMillis)
            .connectionTimeoutMs(sessionMillis)
            // Leasehold's own operations go to the session's handle directly, and the lease
            // engine retries them; Curator's retry policy only covers its own housekeeping.
            .retryPolicy(new RetryNTimes(3, Math.max(1, sessionMillis / 10)))
            .canBeReadOnly(false);
    if (security.clientConfig() != null) {
      builder.zkClientConfig(security.clientConfig());
    }
    if (!security.auth().isEmpty()) {
      // Curator adds them to every ZooKeeper handle it makes (a new session too); the handle
      // itself sends them again on every reconnection of its session.
      builder.authorization(security.auth());
    }
    this.client = builder.build();
    this.store = new ZooKeeperLeaseStore(client, uri, runtime, leases, security.acl());
    client.getConnectionStateListenable().addListener((c, state) -> store.stateChanged(state));
    client.start();
    // The first acquire should not have to race the session's set-up.
    if (!store.awaitSession(uri.sessionTimeout().toNanos())) {
      log.warn(
          "{} is not connected to ZooKeeper after {} ms; it keeps trying, and leases can be"
              + " acquired once it is connected{}", uri, sessionMillis, ZooKeeperLeaseStore.tlsHint(uri));
    }
  }

  /**
   * Waits until this backend has a live ZooKeeper session.
   *
   * @param patience how long at most
   * @return whether it has one
   */
  boolean awaitConnected(Duration patience) {
    return store.awaitSession(patience.toNanos());
  }

  /** Opens a backend on its own threads; the provider's way. */
  static ZooKeeperBackend open(ZooKeeperUri uri) {
    return new ZooKeeperBackend(uri, LeaseRuntime.system("zookeeper"), true);
  }

  /**
   * Opens a backend whose leases run on {@code runtime} (which the caller owns), for tests that
   * freeze a process's timers.
   */
  static ZooKeeperBackend open(ZooKeeperUri uri, LeaseRuntime runtime) {
    return new ZooKeeperBackend(uri, runtime, false);
  }

  /**
   * {@inheritDoc}
   *
   * <p>The lease's {@code ttl} must be at most this backend's session timeout.
   */
  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    Duration session = uri.sessionTimeout();
    if (settings.ttl().compareTo(session) > 0) {
      throw new IllegalArgumentException(
          "ttl must be at most the ZooKeeper session timeout of " + session.toMillis() + " ms (the"
              + " sessionTimeout parameter of " + uri + "), since the session is what keeps the"
              + " lease in the store; was " + settings.ttl().toMillis() + " ms");
    }
    return leases.newLease(settings, store, runtime);
  }

  /** {@return the store operations, for tests that call them request by request} */
  ZooKeeperLeaseStore store() {
    return store;
  }

  /** {@return the current ZooKeeper handle, for tests that look at the session} */
  org.apache.zookeeper.ZooKeeper zooKeeper() {
    try {
      return client.getZookeeperClient().getZooKeeper();
    } catch (Exception e) {
      throw new IllegalStateException("no ZooKeeper handle", e);
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>On ZooKeeper: a persistent recursive watch on the lease node; each change is read back
   * (lease node and holder node in one read-only multi) and reported where the lease node's
   * version says exactly what happened, else as {@code GAP}; see {@code docs/zookeeper.md}.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to observe");
    }
    return observations.open(
        name, observer, runtime.callbacks(), observation ->
            new ZooKeeperObservation(client, runtime.timers(), observation));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On ZooKeeper: the holder node and the lease node's attached children, read with two
   * read-only multis; keys older than the tenure are not its own and are left out.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    try {
      return LeaseSnapshot.readState(client.getZookeeperClient().getZooKeeper(), name)
          .exceptionallyCompose(e -> CompletableFuture.failedFuture(new io.leasehold.LeaseStoreUnavailableException(
              "reading lease '" + name + "' from " + uri() + " failed: " + e, e)));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(new io.leasehold.LeaseStoreUnavailableException(
          "no ZooKeeper connection of " + uri() + " to read lease '" + name + "'", e));
    }
  }

  @Override
  public String uri() {
    return uri.toString();
  }

  /** {@return the ZooKeeper session timeout this backend asks for} */
  public Duration sessionTimeout() {
    return uri.sessionTimeout();
  }

  /**
   * {@inheritDoc}
   *
   * <p>Closing ends the ZooKeeper session, which deletes any holder node still left at once.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      leases.closeAll();
    } finally {
      observations.closeAll();
      store.close();
      try {
        client.close();
      } catch (RuntimeException e) {
        log.warn("Closing the ZooKeeper client of {} failed: {}", uri, e.toString());
      }
      security.close();
      if (ownsRuntime) {
        runtime.close();
      }
    }
  }

  @Override
  public String toString() {
    return "ZooKeeperBackend[" + uri + "]";
  }
}
