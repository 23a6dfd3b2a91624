package io.leasehold.kubernetes;

import io.leasehold.BackendUris;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code kubernetes:} and {@code kubernetes:?namespace=NS}: the API server and credentials
 * come from the pod's service account when running in a cluster, else from {@code
 * ~/.kube/config}; the namespace from the URI, else from the service account or the kubeconfig
 * context, else {@code default}.
 */
public final class KubernetesBackendProvider implements LeaseBackendProvider {

  private static final String FORM = "kubernetes: or kubernetes:?namespace=NAMESPACE";

  /** Called by {@link java.util.ServiceLoader}. */
  public KubernetesBackendProvider() {}

  @Override
  public String scheme() {
    return "kubernetes";
  }

  @Override
  public LeaseBackend open(String uri) {
    return KubernetesBackend.connect(namespaceOf(uri));
  }

  /**
   * The namespace a URI names, or {@code null} when it names none.
   *
   * @throws IllegalArgumentException if the URI is not of the form {@value #FORM}
   */
  static String namespaceOf(String uri) {
    String u = uri.strip();
    int colon = u.indexOf(':');
    if (colon < 0 || !u.substring(0, colon).equalsIgnoreCase("kubernetes")) {
      throw new IllegalArgumentException("backend URI must look like " + FORM + "; was '" + BackendUris.redacted(uri) + "'");
    }
    String rest = u.substring(colon + 1);
    if (rest.isEmpty()) {
      return null;
    }
    String prefix = "?namespace=";
    if (!rest.startsWith(prefix) || rest.indexOf('&') >= 0) {
      throw new IllegalArgumentException(
          "the kubernetes backend takes no address (the API server comes from the service account"
              + " or ~/.kube/config) and one option, namespace: use " + FORM + "; was '"
              + BackendUris.redacted(uri) + "'");
    }
    return KubernetesLeaseNames.checkNamespace(rest.substring(prefix.length()));
  }
}
