package io.leasehold.client;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code leaseholds://host:port[,host:port...]?ca=FILE[&cert=FILE&key=FILE]}: the
 * consistent core over TLS (see {@link CoreBackendProvider#target}).
 */
public final class SecureCoreBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public SecureCoreBackendProvider() {}

  @Override
  public String scheme() {
    return "leaseholds";
  }

  @Override
  public LeaseBackend open(String uri) {
    return CoreBackend.open(uri.strip(), CoreBackendProvider.target(uri));
  }
}
