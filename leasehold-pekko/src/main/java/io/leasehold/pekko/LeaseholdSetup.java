package io.leasehold.pekko;

import io.leasehold.LeaseBackend;
import java.util.Objects;
import java.util.function.Function;
import org.apache.pekko.actor.setup.Setup;

/**
 * Decides how the actor system opens Leasehold backends, instead of {@link
 * LeaseBackend#open(String)}: pass it in the {@code ActorSystemSetup} when the backend must be
 * made in code, for example a connection to a shared in-memory store in tests.
 *
 * <pre>{@code
 * MemoryStore store = MemoryStore.create();
 * MemoryBackend node1 = store.connect();
 * ActorSystem system = ActorSystem.create("app",
 *     ActorSystemSetup.create(BootstrapSetup.create(config), LeaseholdSetup.create(uri -> node1)));
 * }</pre>
 *
 * <p>The opener is called once per backend URI (the {@code backend} key) per actor system; what it
 * returns belongs to the actor system from then on and is closed when the system terminates.
 */
public final class LeaseholdSetup extends Setup {

  private final Function<String, LeaseBackend> opener;

  private LeaseholdSetup(Function<String, LeaseBackend> opener) {
    this.opener = opener;
  }

  /**
   * A setup whose backends come from {@code opener}.
   *
   * @param opener given the {@code backend} URI of a lease block, returns an open backend
   * @return the setup
   */
  public static LeaseholdSetup create(Function<String, LeaseBackend> opener) {
    return new LeaseholdSetup(Objects.requireNonNull(opener, "opener"));
  }

  Function<String, LeaseBackend> opener() {
    return opener;
  }
}
