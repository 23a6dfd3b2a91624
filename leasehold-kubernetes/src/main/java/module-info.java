/**
 * The Kubernetes backend ({@code kubernetes:[?namespace=ns]}): leases as {@code
 * coordination.k8s.io/v1} Lease objects, on the fabric8 Kubernetes client.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module io.leasehold.kubernetes {
  requires transitive io.leasehold.spi;
  requires transitive kubernetes.client.api;
  requires kubernetes.model.core;
  requires kubernetes.model.coordination;
  requires kubernetes.client;
  requires io.fabric8.kubernetes.client.jdkhttp;
  requires org.slf4j;

  exports io.leasehold.kubernetes;

  provides io.leasehold.LeaseBackendProvider with
      io.leasehold.kubernetes.KubernetesBackendProvider;
}
