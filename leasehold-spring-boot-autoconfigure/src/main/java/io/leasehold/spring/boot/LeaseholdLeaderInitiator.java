package io.leasehold.spring.boot;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseSettings;
import io.leasehold.recipes.election.LeaderContext;
import io.leasehold.recipes.election.LeaderElection;
import io.leasehold.recipes.election.LeaderWork;
import io.leasehold.recipes.election.LeadershipListener.Why;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationEventPublisherAware;
import org.springframework.context.SmartLifecycle;

/**
 * A {@link LeaderElection} (from {@code leasehold-recipes}) run by the Spring context: it starts
 * contending when the context starts and gives leadership up when the context stops (the work is
 * interrupted and the lease released, so another instance takes over at once instead of after the
 * TTL). Each term publishes a {@link LeaderGrantedEvent} before its work starts and a {@link
 * LeaderRevokedEvent} after its work has ended and before the lease is released.
 *
 * <p>Declare one as a bean, with or without leader-only work:
 *
 * <pre>{@code
 * @Bean
 * LeaseholdLeaderInitiator compactor(LeaseBackend backend, LeaseSettingsTemplate settings) {
 *   return new LeaseholdLeaderInitiator("compactor", backend, settings.apply("leader/compactor"),
 *       ctx -> { while (ctx.isLeader()) compactNextBatch(ctx.fencingToken()); });
 * }
 * }</pre>
 *
 * or let the auto-configuration make one per {@code leasehold.leader-election.<role>} entry
 * (events only). Without work, the term lasts until the lease is lost or the initiator stops.
 */
public class LeaseholdLeaderInitiator implements SmartLifecycle, ApplicationEventPublisherAware, DisposableBean {

  private static final Logger log = LoggerFactory.getLogger(LeaseholdLeaderInitiator.class);

  /** Work that holds the term until it is interrupted: leadership for the events alone. */
  private static final LeaderWork HOLD = ctx -> new CountDownLatch(1).await();

  private final String role;
  private final LeaseBackend backend;
  private final LeaseSettings settings;
  private final LeaderWork work;
  private volatile ApplicationEventPublisher publisher = event -> {};
  private boolean autoStartup = true;
  private int phase = DEFAULT_PHASE;

  private final Object lock = new Object();
  // Guarded by lock.
  private LeaderElection election;
  private Lease lease;
  /** Set before the election is closed, so the revoked event says CLOSED, not LOST. */
  private volatile boolean stopping;

  /**
   * An initiator whose terms only publish events.
   *
   * @param role the name events carry
   * @param backend where the lease lives
   * @param settings the lease's settings (its name is what all instances contend for)
   */
  public LeaseholdLeaderInitiator(String role, LeaseBackend backend, LeaseSettings settings) {
    this(role, backend, settings, HOLD);
  }

  /**
   * An initiator that runs {@code work} while it leads: the work is interrupted at once when the
   * lease is lost, and when the initiator stops; see {@link LeaderElection}.
   *
   * @param role the name events carry
   * @param backend where the lease lives
   * @param settings the lease's settings (its name is what all instances contend for)
   * @param work the leader-only work
   */
  public LeaseholdLeaderInitiator(String role, LeaseBackend backend, LeaseSettings settings, LeaderWork work) {
    this.role = Objects.requireNonNull(role, "role");
    this.backend = Objects.requireNonNull(backend, "backend");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.work = Objects.requireNonNull(work, "work");
  }

  /** {@return the role this initiator contends for} */
  public String getRole() {
    return role;
  }

  /** {@return the lease settings; all instances contend for {@code getSettings().name()}} */
  public LeaseSettings getSettings() {
    return settings;
  }

  /**
   * Whether this process leads now: local, no I/O, never {@code true} past the lease's safe
   * deadline. Use the granted event's context or {@link #getFencingToken()} for the token.
   *
   * @return whether this process leads
   */
  public boolean isLeader() {
    LeaderElection e;
    synchronized (lock) {
      e = election;
    }
    return e != null && e.isLeader();
  }

  /** {@return the fencing token of the current term, empty when not leading} */
  public OptionalLong getFencingToken() {
    Lease l;
    synchronized (lock) {
      l = lease;
    }
    return l != null && isLeader() ? l.fencingToken() : OptionalLong.empty();
  }

  @Override
  public void setApplicationEventPublisher(ApplicationEventPublisher publisher) {
    this.publisher = publisher;
  }

  /** @param autoStartup whether the context starts this initiator; default true */
  public void setAutoStartup(boolean autoStartup) {
    this.autoStartup = autoStartup;
  }

  @Override
  public boolean isAutoStartup() {
    return autoStartup;
  }

  /** @param phase the lifecycle phase; default {@link SmartLifecycle#DEFAULT_PHASE}, stopped first */
  public void setPhase(int phase) {
    this.phase = phase;
  }

  @Override
  public int getPhase() {
    return phase;
  }

  /** Starts contending; a new lease object per start, so a stopped initiator can start again. */
  @Override
  public void start() {
    synchronized (lock) {
      if (election != null) {
        return;
      }
      stopping = false;
      lease = backend.newLease(settings);
      // Observing the lease, a follower takes over as soon as the leader releases it.
      election = LeaderElection.builder(lease, this::lead).observing(backend).start();
    }
  }

  /**
   * Gives leadership up: interrupts the work, waits for it (and the revoked event's listeners) to
   * end, releases the lease and waits for the store's confirmation; see {@link
   * LeaderElection#close()}. Blocks, so that a context shutdown hands the role on at once.
   */
  @Override
  public void stop() {
    LeaderElection e;
    Lease l;
    synchronized (lock) {
      e = election;
      l = lease;
      if (e == null) {
        return;
      }
      stopping = true;
    }
    try {
      e.close();
      l.close();
    } finally {
      synchronized (lock) {
        election = null;
        lease = null;
      }
    }
  }

  @Override
  public boolean isRunning() {
    synchronized (lock) {
      return election != null;
    }
  }

  /** Stops if the context did not (a context that was never started, a failed refresh). */
  @Override
  public void destroy() {
    stop();
  }

  /** One term: the events around the work, all on the term's thread, in order. */
  private void lead(LeaderContext ctx) throws Exception {
    Why why = Why.WORK_FAILED;
    try {
      // Inside the try: when a granted listener throws, the listeners that already started
      // leader-only work still hear, from the revoked event, that the term ended.
      publisher.publishEvent(new LeaderGrantedEvent(this, role, ctx));
      work.lead(ctx);
      why = Why.WORK_RETURNED;
    } catch (InterruptedException e) {
      why = stopping ? Why.CLOSED : Why.LOST;
      throw e;
    } finally {
      if (stopping) {
        why = Why.CLOSED;
      } else if (!ctx.lease().checkAlive() || ctx.lease().fencingToken().orElse(-1) != ctx.fencingToken()) {
        why = Why.LOST;
      }
      try {
        publisher.publishEvent(new LeaderRevokedEvent(this, role, ctx.fencingToken(), why));
      } catch (RuntimeException e) {
        log.error("A listener of the revoked event of role '{}' threw", role, e);
      }
    }
  }

  @Override
  public String toString() {
    return "LeaseholdLeaderInitiator{role='" + role + "', lease='" + settings.name() + "', "
        + (isLeader() ? "leading" : "not leading") + '}';
  }
}
