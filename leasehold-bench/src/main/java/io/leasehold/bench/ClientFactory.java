package io.leasehold.bench;

import io.leasehold.LeaseBackend;
import io.leasehold.memory.MemoryStore;
import java.util.Locale;

/**
 * Opens backend instances on one store, each standing for one client process: its own
 * connection, session and threads.
 */
@FunctionalInterface
interface ClientFactory {

  /** {@return a new backend instance; the caller closes it} */
  LeaseBackend open();

  /**
   * {@return a factory for {@code uri}} For {@code memory:} every instance connects to one
   * in-process store made here (opening {@code memory:} twice would give two unrelated stores).
   */
  static ClientFactory forUri(String uri) {
    if (uri.strip().toLowerCase(Locale.ROOT).equals("memory:")) {
      MemoryStore store = MemoryStore.create();
      return store::connect;
    }
    return () -> LeaseBackend.open(uri);
  }

  /** {@return whether {@code uri} names a store private to this process} */
  static boolean inProcess(String uri) {
    return uri.strip().toLowerCase(Locale.ROOT).startsWith("memory:");
  }
}
