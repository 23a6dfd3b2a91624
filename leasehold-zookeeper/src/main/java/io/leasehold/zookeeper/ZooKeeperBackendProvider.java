package io.leasehold.zookeeper;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code zookeeper://host:port[,host:port...][/chroot][?sessionTimeout=15s]}, optionally
 * with {@code ca}, {@code cert} and {@code key} (TLS) and {@code user} and {@code password-file}
 * (digest authentication, znodes for that identity only); see {@link ZooKeeperBackend}.
 */
public final class ZooKeeperBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public ZooKeeperBackendProvider() {}

  @Override
  public String scheme() {
    return ZooKeeperUri.SCHEME;
  }

  @Override
  public LeaseBackend open(String uri) {
    return ZooKeeperBackend.open(ZooKeeperUri.parse(uri));
  }
}
