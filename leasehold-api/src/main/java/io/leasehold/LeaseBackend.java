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

  /** {@return the URI this backend was opened with, with any credentials removed} */
  String uri();

  /**
   * Closes every lease made by this backend (released where held, waiting at most one operation
   * timeout each), then the connection and threads. Idempotent; never throws.
   */
  @Override
  void close();
}
