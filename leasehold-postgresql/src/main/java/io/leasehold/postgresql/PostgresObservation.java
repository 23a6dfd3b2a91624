package io.leasehold.postgresql;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.Scheduler;
import io.leasehold.spi.Observation;
import io.leasehold.spi.OpenObservations;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Observing lease names on PostgreSQL: the acquire and release functions {@code NOTIFY} channel
 * {@code <schema>_leases} at commit, and one connection per backend {@code LISTEN}s to it for every
 * observation. The name's counter is the revision: an event whose token is the next one continues
 * the story; one further ahead, or a reconnect after which the name's row is not as last seen,
 * gives {@code GAP} with the state read again. Nothing is notified when a session expires (time
 * passes, nothing is written): the observation reads the name again when the database says its
 * holder's session would expire, and reports {@code EXPIRED} once the database says it has. The
 * listening connection needs session state, so it must reach the server directly, not through a
 * transaction-mode pooler.
 */
final class PostgresObservation implements OpenObservations.StoreWatch {

  private static final Logger log = LoggerFactory.getLogger(PostgresObservation.class);

  private final Listener listener;
  private final PostgresLeaseStore store;
  private final Scheduler timers;
  private final Observation observation;
  private final String name;

  // Guarded by this.
  private boolean initialised;
  private long token;
  private String holder; // null when free (or its end was reported)
  private final List<Notice> early = new java.util.ArrayList<>();
  private Scheduler.Cancellable expiryCheck = Scheduler.Cancellable.NONE;
  private volatile boolean closed;

  PostgresObservation(Listener listener, PostgresLeaseStore store, Scheduler timers, Observation observation) {
    this.listener = listener;
    this.store = store;
    this.timers = timers;
    this.observation = observation;
    this.name = observation.name();
  }

  /** One notification: a grant or a release of {@code name}. */
  record Notice(boolean acquired, long token, String name, String holder) {
    static Notice parse(String payload) {
      String[] parts = payload.split(" ", 4);
      if (parts.length < 4) {
        return null;
      }
      try {
        long token = Long.parseLong(parts[1]);
        int length = Integer.parseInt(parts[2]);
        String rest = parts[3];
        int end = rest.offsetByCodePoints(0, length);
        return new Notice("acquired".equals(parts[0]), token, rest.substring(0, end), rest.substring(end));
      } catch (RuntimeException e) {
        return null;
      }
    }
  }

  @Override
  public void start() {
    listener.add(this);
    // LISTEN is in place before this read (the listener waits for it), so nothing committed
    // after the read can be missed; what came before it is skipped by its token.
    listener.ready().thenRun(() -> read(true)).exceptionally(error -> {
      retryLater();
      return null;
    });
  }

  private void retryLater() {
    if (!closed) {
      timers.schedule(() -> read(true), TimeUnit.MILLISECONDS.toNanos(200));
    }
  }

  /** Reads the name and reports what changed since the last state seen (all of it the first time). */
  private void read(boolean resync) {
    if (closed) {
      return;
    }
    store.read(name).whenComplete((r, error) -> {
      if (error != null) {
        log.debug("Reading '{}' for an observer failed: {}", name, error.toString());
        retryLater();
        return;
      }
      synchronized (this) {
        if (!initialised) {
          initialised = true;
          token = r.token();
          holder = r.held() ? r.holder() : null;
          observation.emit(event(LeaseEvent.Type.CURRENT, holder, token, ""));
          for (Notice n : early) {
            apply(n);
          }
          early.clear();
        } else if (r.token() != token) {
          if (resync) {
            // Changes happened while the listener was away: they cannot be told one by one.
            token = r.token();
            holder = r.held() ? r.holder() : null;
            observation.emit(event(LeaseEvent.Type.GAP, holder, token,
                "the notifications of the time the listening connection was down are lost"));
          }
          // Else a notification of the change is on its way.
        } else if (holder != null && !r.held()) {
          LeaseEvent.Type type = "expired".equals(r.state()) ? LeaseEvent.Type.EXPIRED : LeaseEvent.Type.RELEASED;
          observation.emit(event(type, holder, token, type == LeaseEvent.Type.EXPIRED
              ? "its session expired by the database's clock" : ""));
          holder = null;
        }
        scheduleExpiryCheck(r);
      }
    });
  }

  /** While held: read again when the database says the holder's session would expire. */
  private synchronized void scheduleExpiryCheck(PostgresLeaseStore.Read r) {
    expiryCheck.cancel();
    if (closed || holder == null || !r.held() || r.token() != token) {
      return;
    }
    // A duration the database measured, waited out here: no clock is compared with another.
    long wait = TimeUnit.MILLISECONDS.toNanos(Math.max(20, r.remainingMillis() + 20));
    expiryCheck = timers.schedule(() -> read(false), wait);
  }

  /** A notification for this name (on the listener's thread). */
  synchronized void notified(Notice n) {
    if (closed) {
      return;
    }
    if (!initialised) {
      early.add(n);
      return;
    }
    apply(n);
  }

  private void apply(Notice n) {
    if (n.acquired()) {
      if (n.token() <= token) {
        return; // seen already (the first read came after it)
      }
      if (n.token() > token + 1) {
        resyncSoon();
        return;
      }
      if (holder != null) {
        // The tenure before ended without a release: taken over after its session expired.
        observation.emit(event(LeaseEvent.Type.EXPIRED, holder, token,
            "its session expired by the database's clock; the name was granted anew"));
      }
      token = n.token();
      holder = n.holder();
      observation.emit(event(LeaseEvent.Type.ACQUIRED, holder, token, ""));
      read(false); // to learn when it would expire
    } else {
      if (n.token() < token || (n.token() == token && holder == null)) {
        return; // an older tenure's, or its end was reported already
      }
      if (n.token() > token) {
        resyncSoon();
        return;
      }
      observation.emit(event(LeaseEvent.Type.RELEASED, holder, token, ""));
      holder = null;
      expiryCheck.cancel();
    }
  }

  private void resyncSoon() {
    timers.schedule(() -> read(true), 0);
  }

  /** The listening connection was re-established: compare with what the name's row says now. */
  void reconnected() {
    read(true);
  }

  private LeaseEvent event(LeaseEvent.Type type, String holder, long token, String detail) {
    Optional<LeaseHolding> holding =
        holder == null ? Optional.empty() : Optional.of(new LeaseHolding(holder, token, Optional.empty()));
    return new LeaseEvent(type, name, holding, detail);
  }

  @Override
  public void close() {
    closed = true;
    synchronized (this) {
      expiryCheck.cancel();
    }
    listener.remove(this);
  }

  /**
   * The one listening connection of a backend, on a thread of its own: it {@code LISTEN}s while
   * any observation is open, hands each notification to the observations of its name, reconnects
   * when the connection fails (checking it every few seconds), and then has every observation
   * compare its name's row with what it saw last.
   */
  static final class Listener {
    private final Database db;
    private final String channel;
    private final Map<String, List<PostgresObservation>> byName = new ConcurrentHashMap<>();
    private final Set<PostgresObservation> all = ConcurrentHashMap.newKeySet();
    private final Object lock = new Object();
    private Thread thread; // guarded by lock
    private java.util.concurrent.CompletableFuture<Void> ready = new java.util.concurrent.CompletableFuture<>(); // guarded by lock
    private volatile boolean stopped;
    /** For tests: no listening connection while set. */
    private volatile boolean away;
    private volatile Connection current;

    Listener(Database db) {
      this.db = db;
      this.channel = db.schema() + "_leases";
    }

    void add(PostgresObservation o) {
      byName.computeIfAbsent(o.name, n -> new CopyOnWriteArrayList<>()).add(o);
      all.add(o);
      synchronized (lock) {
        if (thread == null && !stopped) {
          thread = new Thread(this::run, "leasehold-postgresql-listener");
          thread.setDaemon(true);
          thread.start();
        }
      }
    }

    void remove(PostgresObservation o) {
      all.remove(o);
      List<PostgresObservation> list = byName.get(o.name);
      if (list != null) {
        list.remove(o);
      }
    }

    java.util.concurrent.CompletableFuture<Void> ready() {
      synchronized (lock) {
        return ready.copy();
      }
    }

    /**
     * For tests: cuts the listening connection and does not open another until {@link
     * #comeBackForTest()}: whatever is notified meanwhile is lost, as in a real outage.
     */
    void goAwayForTest() {
      away = true;
      Connection c = current;
      if (c != null) {
        try {
          c.abort(Runnable::run);
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    }

    /** For tests: the listener reconnects, and every observation compares its name's row. */
    void comeBackForTest() {
      away = false;
    }

    void stop() {
      stopped = true;
      Thread t;
      synchronized (lock) {
        t = thread;
      }
      if (t != null) {
        t.interrupt();
      }
    }

    private void run() {
      boolean first = true;
      while (!stopped && !db.isClosed()) {
        if (away) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
          continue;
        }
        try (Connection c = db.openOwn()) {
          current = c;
          try (Statement s = c.createStatement()) {
            s.execute("LISTEN " + channel);
          }
          synchronized (lock) {
            ready.complete(null);
          }
          if (!first) {
            all.forEach(PostgresObservation::reconnected);
          }
          first = false;
          listen(c);
        } catch (SQLException | RuntimeException e) {
          if (!stopped && !db.isClosed()) {
            log.debug("The listening connection to {} failed: {}; reconnecting", db.name(), e.toString());
            synchronized (lock) {
              if (ready.isDone()) {
                ready = new java.util.concurrent.CompletableFuture<>();
              }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
          }
        }
      }
    }

    private void listen(Connection c) throws SQLException {
      PGConnection pg = c.unwrap(PGConnection.class);
      long lastProbe = System.nanoTime();
      while (!stopped && !db.isClosed()) {
        PGNotification[] notes = pg.getNotifications(250);
        if (notes != null) {
          for (PGNotification n : notes) {
            Notice notice = Notice.parse(n.getParameter());
            if (notice == null) {
              log.warn("Ignoring a notification on {} that is not Leasehold's: {}", channel, n.getParameter());
              continue;
            }
            List<PostgresObservation> list = byName.get(notice.name());
            if (list != null) {
              list.forEach(o -> o.notified(notice));
            }
          }
        }
        // A connection whose peer vanished says nothing: ask it something now and then.
        if (System.nanoTime() - lastProbe > TimeUnit.SECONDS.toNanos(3)) {
          lastProbe = System.nanoTime();
          c.setNetworkTimeout(Runnable::run, 3_000);
          try (Statement s = c.createStatement()) {
            s.execute("SELECT 1");
          }
          c.setNetworkTimeout(Runnable::run, 0);
        }
      }
    }
  }
}
