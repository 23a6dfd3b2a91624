package io.leasehold.etcd;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code etcds://host:port[,host:port...]?ca=FILE[&cert=FILE&key=FILE][&...]}: etcd over
 * TLS (see {@link EtcdBackend#open(String)}).
 */
public final class SecureEtcdBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public SecureEtcdBackendProvider() {}

  @Override
  public String scheme() {
    return "etcds";
  }

  @Override
  public LeaseBackend open(String uri) {
    return EtcdBackend.open(uri);
  }
}
