package io.leasehold.postgresql;

import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/**
 * Serves {@code postgresql://host[:port][,host[:port]...]/database[?schema=NAME&user=NAME&password-file=FILE...]};
 * see {@link PostgresBackend#open(String)}.
 */
public final class PostgresBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public PostgresBackendProvider() {}

  @Override
  public String scheme() {
    return "postgresql";
  }

  @Override
  public LeaseBackend open(String uri) {
    return PostgresBackend.open(uri);
  }
}
