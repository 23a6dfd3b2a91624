package io.leasehold;

/**
 * A connection to one lease store, shared by all leases of a process: one connection, one
 * session, one renewal thread, however many leases it makes.
 *
 * <p>Open one with {@link #open(String)} and a URI that names the store:
 *
 * <table>
 *   <caption>Backend URIs</caption>
 *   <tr><th>URI</th><th>store</th><th>module</th></tr>
 *   <tr><td>{@code memory:}</td><td>a fresh in-process store (tests, demos)</td>
 *       <td>{@code leasehold-memory}</td></tr>
 *   <tr><td>{@code leasehold://host:port[,host:port]}</td><td>the Leasehold consistent core</td>
 *       <td>{@code leasehold-client}</td></tr>
 *   <tr><td>{@code etcd://host:2379[,host:2379]}</td><td>etcd v3</td>
 *       <td>{@code leasehold-etcd}</td></tr>
 *   <tr><td>{@code zookeeper://host:2181[,host:2181][/chroot]}</td><td>Apache ZooKeeper</td>
 *       <td>{@code leasehold-zookeeper}</td></tr>
 *   <tr><td>{@code kubernetes:[?namespace=ns]}</td><td>{@code coordination.k8s.io/v1} Lease
 *       objects</td><td>{@code leasehold-kubernetes}</td></tr>
 * </table>
 *
 * <p>Backends are found with {@link java.util.ServiceLoader}: an application depends on this API
 * and on the module of the backend it runs. Closing a backend closes every lease it made, as
 * {@link Lease#close()} does (released, no {@link Lease#onLost} call). Implementations are
 * thread-safe.
 */
public interface LeaseBackend extends AutoCloseable {

  /**
   * Opens the backend that {@code uri} names.
   *
   * @param uri a backend URI such as {@code memory:} or {@code etcd://127.0.0.1:2379}
   * @return the open backend; the caller closes it
   * @throws IllegalArgumentException if the URI is malformed, no backend on the class path or
   *     module path serves its scheme (the message lists the schemes that are available), or the
   *     backend rejects the rest of the URI
   */
  static LeaseBackend open(String uri) {
    return BackendRegistry.open(uri);
  }

  /**
   * Makes a new lease object: a new holder for {@code settings.name()} with a fresh incarnation.
   * It holds nothing until {@link Lease#acquire()} succeeds. Several lease objects for the same
   * name, from this backend or others on the same store, contend for it.
   *
   * @param settings the lease's settings
   * @return the new lease; the caller closes it, or closing the backend does
   * @throws IllegalArgumentException if the settings exceed this backend's limits (the message
   *     names the setting and the limit); nothing is registered in that case
   * @throws IllegalStateException if the backend is closed
   */
  Lease newLease(LeaseSettings settings);

  /**
   * Observes a lease name: tells {@code observer} who holds it now, then every change, in the
   * order the store made them, until the subscription is cancelled or this backend is closed.
   *
   * <p>The first event is always {@link LeaseEvent.Type#CURRENT}: the holder (holder, token, since
   * when) or "free". Then, in store order: {@code ACQUIRED}, {@code RELEASED}, {@code EXPIRED},
   * {@code REVOKED}, {@code TAKEN_OVER}. The observer follows the store across reconnects: where
   * the store can resume from a revision, nothing is missed; where it cannot (its history was
   * compacted meanwhile), the observer is told {@link LeaseEvent.Type#GAP} with the state re-read
   * after the gap, never a silent skip. The name need not be held, nor exist yet.
   *
   * <p>An observation is a way to learn quickly, not what safety rests on: a watch can go silent
   * while the network is cut. A holder relies on {@link Lease#checkAlive()} and {@link
   * Lease#onLost}; a waiter still calls {@link Lease#acquire()}, which alone decides.
   *
   * <p><b>An optional capability.</b> Backends that cannot observe leases throw {@link
   * UnsupportedOperationException} naming the backend, at once and for every name; the default
   * implementation does. In this release every backend supports it: {@code memory:}, {@code
   * leasehold://}, etcd, ZooKeeper and Kubernetes (docs/watch.md says how each observes).
   *
   * @param name the lease name, under the same rules as {@link LeaseSettings#name()}
   * @param observer called with each event, one at a time, on the backend's callback thread
   * @return a subscription whose {@link Subscription#cancel()} ends the observation
   * @throws UnsupportedOperationException if this backend cannot observe leases
   * @throws IllegalArgumentException if the name is invalid
   * @throws IllegalStateException if the backend is closed
   */
  default Subscription observe(String name, LeaseObserver observer) {
    throw new UnsupportedOperationException(
        "observing leases is not supported by the " + uri() + " backend");
  }

  /**
   * Reads a lease as the store holds it now: its holder, token and attached keys, or "free". The
   * read is as fresh as the store's reads are (linearizable on the core).
   *
   * <p>An optional capability, like {@link #observe}: backends that cannot read a lease's state
   * throw {@link UnsupportedOperationException} naming the backend; the default implementation
   * does.
   *
   * @param name the lease name
   * @return the state; fails with a {@link LeaseException} if the store cannot be reached
   * @throws UnsupportedOperationException if this backend cannot read lease states
   * @throws IllegalArgumentException if the name is invalid
   * @throws IllegalStateException if the backend is closed
   */
  default java.util.concurrent.CompletableFuture<LeaseState> read(String name) {
    throw new UnsupportedOperationException(
        "reading lease states is not supported by the " + uri() + " backend");
  }

  /**
   * Opt-in coordinated shutdown: when the JVM shuts down (SIGTERM, SIGINT, {@link System#exit}),
   * releases every lease this backend holds, so that the next holder starts at once instead of
   * after the TTL. The hook {@linkplain #close() closes} this backend and waits for that at most
   * {@code bound}; a release not confirmed by then is left to expire in the store, as after a
   * crash.
   *
   * <p>The release makes each lease's {@link Lease#checkAlive()} false, without an {@link
   * Lease#onLost} call (as {@link #close()} does). Use it where the work a lease guards checks
   * {@code checkAlive()} (or a fencing token) before each effect, or stops in its own shutdown
   * hook: JVM shutdown hooks run concurrently, in no set order. A framework with its own shutdown
   * sequence should instead call {@link #close()} itself, after it stopped the work (see
   * docs/watch.md, "Coordinated shutdown").
   *
   * @param bound how long the hook waits for the releases, 1 ms to 10 min
   * @return a subscription whose {@link Subscription#cancel()} removes the hook again (a no-op
   *     once the JVM is shutting down)
   * @throws IllegalArgumentException if {@code bound} is out of range (the message names it)
   * @throws IllegalStateException if the JVM is already shutting down
   */
  default Subscription releaseOnShutdown(java.time.Duration bound) {
    java.util.Objects.requireNonNull(bound, "bound");
    if (bound.compareTo(java.time.Duration.ofMillis(1)) < 0
        || bound.compareTo(java.time.Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException(
          "releaseOnShutdown bound must be between 1ms and 10min; was " + bound);
    }
    Thread hook =
        new Thread(
            () -> {
              // close() on a thread of its own, so a store that does not answer cannot hold the
              // JVM's exit past the bound.
              Thread closer = new Thread(this::close, "leasehold-shutdown-release");
              closer.setDaemon(true);
              closer.start();
              try {
                closer.join(bound.toMillis());
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "leasehold-shutdown-hook");
    Runtime.getRuntime().addShutdownHook(hook);
    return () -> {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs, or has run: nothing to undo
      }
    };
  }

  /** {@return the URI this backend was opened with, with any credentials removed} */
  String uri();

  /**
   * Closes every lease made by this backend (released where held, waiting at most one operation
   * timeout each), then the connection and threads. Idempotent; never throws.
   */
  @Override
  void close();
}
