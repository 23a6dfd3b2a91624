package io.leasehold.memory;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.spi.Observation;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.ProcessGate;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.VirtualClock;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One simulated process's connection to a {@link MemoryStore}, and the {@link LeaseBackend}
 * its leases come from. Besides the backend contract it lets a test do to the process what
 * happens to real ones:
 *
 * <ul>
 *   <li>{@link #cutOff()} / {@link #heal()}: a network partition. Requests and the store's
 *       notices are held back, not lost, and arrive when it heals, as over TCP; the leases see
 *       timeouts meanwhile and keep retrying until their safe deadline.</li>
 *   <li>{@link #pause()} / {@link #resume()}: the whole process stops, as under {@code SIGSTOP}
 *       or a long garbage collection; renewals and handlers due meanwhile run on resume.</li>
 *   <li>{@link #delayReplies(Duration)}: replies come back late, as over a congested network.</li>
 *   <li>{@link #crash()}: the process dies without releasing anything; the store's TTL cleans
 *       up.</li>
 * </ul>
 *
 * <p>The leases of one connection share its timer thread and its callback thread (or the store's
 * {@link VirtualClock}).
 */
public final class MemoryBackend implements LeaseBackend {

  private final MemoryStore store;
  private final String name;
  private final LeaseRuntime threads;
  private final LeaseRuntime runtime;
  private final ProcessGate gate = new ProcessGate();
  private final OpenLeases leases;
  private final MemoryLeaseStore link;
  private final Set<Observation> observations = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  MemoryBackend(MemoryStore store, VirtualClock clock, String name) {
    this.store = store;
    this.name = name;
    this.threads = clock != null ? LeaseRuntime.of(clock, clock, clock) : LeaseRuntime.system(name);
    this.runtime = gate.wrap(threads);
    this.leases = new OpenLeases(name);
    this.link = new MemoryLeaseStore(store, leases, runtime.timers());
  }

  /**
   * {@inheritDoc}
   *
   * <p>The memory backend has no limits beyond those of {@link LeaseSettings}.
   */
  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    return leases.newLease(settings, link, runtime);
  }

  /**
   * {@inheritDoc}
   *
   * <p>On the memory backend every change is reported in the order the store made it; the events
   * travel over this process's connection, so a cut-off process hears of them when it heals, in
   * order, missing none (it never sees {@link io.leasehold.LeaseEvent.Type#GAP}). A crashed
   * process hears nothing more.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed) {
      throw new IllegalStateException("backend " + this.name + " is closed; open a new one to observe");
    }
    Observation[] self = new Observation[1];
    Observation observation =
        new Observation(
            name,
            observer,
            runtime.callbacks(),
            () -> {
              observations.remove(self[0]);
              store.unwatch(self[0]);
            });
    self[0] = observation;
    observations.add(observation);
    store.watch(observation, link);
    return observation;
  }

  /**
   * {@inheritDoc}
   *
   * <p>The read travels over this process's connection: while it is cut off, the answer waits.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed) {
      throw new IllegalStateException("backend " + this.name + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    return link.read(name);
  }

  @Override
  public String uri() {
    return "memory:";
  }

  /** {@return the store this process is connected to} */
  public MemoryStore store() {
    return store;
  }

  /** Cuts this process off the store: its traffic both ways is held back until {@link #heal()}. */
  public void cutOff() {
    link.cutOff();
  }

  /** Reconnects after {@link #cutOff()}; what was held back is delivered in order. */
  public void heal() {
    link.heal();
  }

  /**
   * Makes the store's replies, and its notices, reach this process only {@code delay} after the
   * store handled the request: a slow or congested network on the way back. Requests still arrive
   * at once, so the store's TTL starts long before the holder hears that it renewed.
   *
   * @param delay how late replies arrive; zero for none
   * @throws IllegalArgumentException if {@code delay} is negative
   */
  public void delayReplies(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay must not be negative; was " + delay);
    }
    link.delayReplies(delay);
  }

  /** {@return whether the process is cut off from the store} */
  public boolean isCutOff() {
    return link.isCutOff();
  }

  /**
   * Freezes the process: none of its timers or handlers run until {@link #resume()}.
   *
   * @throws IllegalStateException if the process crashed
   */
  public void pause() {
    gate.pause();
  }

  /**
   * Lets a paused process run again; what fell due meanwhile runs now.
   *
   * @throws IllegalStateException if the process crashed
   */
  public void resume() {
    gate.resume();
  }

  /**
   * Kills the process: no release, no further renewal, no handler; its leases are left for the
   * store's TTL to clean up. Its lease objects must not be used afterwards.
   */
  public void crash() {
    link.crash();
    gate.crash();
  }

  /**
   * {@inheritDoc}
   *
   * <p>A crashed process releases nothing; closing it only frees its threads.
   */
  @Override
  public void close() {
    closed = true;
    observations.forEach(Observation::cancel);
    if (gate.state() != ProcessGate.State.CRASHED) {
      leases.closeAll();
    }
    threads.close();
  }

  @Override
  public String toString() {
    return "MemoryBackend{" + name + ", " + gate.state() + (isCutOff() ? ", cut off" : "") + '}';
  }
}
