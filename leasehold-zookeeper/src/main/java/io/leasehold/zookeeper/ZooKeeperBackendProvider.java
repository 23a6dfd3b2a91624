package io.leasehold.zookeeper;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code zookeeper://host:port[,host:port...][/chroot][?sessionTimeout=15s]}; see {@link
 * ZooKeeperBackend}.
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
