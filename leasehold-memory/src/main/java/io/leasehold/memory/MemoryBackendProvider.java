package io.leasehold.memory;

import io.leasehold.BackendUris;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseBackendProvider;

/** Serves {@code memory:}: each open makes a fresh {@link MemoryStore} and connects to it. */
public final class MemoryBackendProvider implements LeaseBackendProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public MemoryBackendProvider() {}

  @Override
  public String scheme() {
    return "memory";
  }

  @Override
  public LeaseBackend open(String uri) {
    if (!"memory:".equalsIgnoreCase(uri.strip())) {
      throw new IllegalArgumentException(
          "the memory backend takes no address or options: use 'memory:'; was '" + BackendUris.redacted(uri) + "'."
              + " To let several connections share one store, use MemoryStore.connect()");
    }
    return MemoryStore.create().connect();
  }
}
