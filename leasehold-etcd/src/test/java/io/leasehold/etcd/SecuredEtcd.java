package io.leasehold.etcd;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** What the tests against a secured etcd ({@link EtcdTlsTest}, {@link EtcdAuthTest}) share. */
final class SecuredEtcd {

  private SecuredEtcd() {}

  /** Generous timeouts: a loaded machine, and a handshake and a login on the first request. */
  static LeaseSettings settings(String name, String owner) {
    return LeaseSettings.builder(name, owner)
        .ttl(Duration.ofSeconds(30))
        .operationTimeout(Duration.ofSeconds(5))
        .acquireRetries(0)
        .build();
  }

  /** A backend that has reached etcd: a cold JVM's first round trips are slow, not the point. */
  static <B extends LeaseBackend> B connected(B backend) throws Exception {
    ((EtcdBackend) backend).connected().get(30, TimeUnit.SECONDS);
    return backend;
  }
}
