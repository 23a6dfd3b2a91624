package io.leasehold.etcd;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code etcd://host:port[,host:port...][?namespace=/path][&user=NAME&password-file=FILE]}
 * (plaintext; {@link SecureEtcdBackendProvider} serves {@code etcds://}).
 */
public final class EtcdBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public EtcdBackendProvider() {}

  @Override
  public String scheme() {
    return "etcd";
  }

  @Override
  public LeaseBackend open(String uri) {
    return EtcdBackend.open(uri);
  }
}
