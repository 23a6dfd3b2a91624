package io.leasehold;

/**
 * Service-provider interface through which {@link LeaseBackend#open(String)} finds backends.
 *
 * <p>A backend module registers one implementation with {@code provides
 * io.leasehold.LeaseBackendProvider with ...} in its module descriptor and in {@code
 * META-INF/services/io.leasehold.LeaseBackendProvider}, and needs a public no-argument
 * constructor. Backend authors: run the {@code leasehold-testkit} contract suite against a real
 * store before you publish.
 */
public interface LeaseBackendProvider {

  /**
   * The URI scheme this provider serves, in lower case, without the colon: {@code "etcd"}.
   *
   * @return the scheme
   */
  String scheme();

  /**
   * Opens a backend for a URI of this provider's scheme.
   *
   * @param uri the whole URI, scheme included, as the application gave it
   * @return the open backend
   * @throws IllegalArgumentException if the URI is malformed for this backend; the message says
   *     which part is wrong and what form is expected
   */
  LeaseBackend open(String uri);
}
