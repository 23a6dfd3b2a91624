package io.leasehold.postgresql;

import io.leasehold.HolderId;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseProtocolException;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.ManagedLease;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import java.sql.Array;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LeaseStore} on PostgreSQL. Every operation is one call of a function of the shipped
 * schema ({@code V1__leasehold.sql}), so one statement and one transaction under the default READ
 * COMMITTED; inside it, row locks order whatever could race.
 *
 * <ul>
 *   <li>acquire: {@code acquire(name, holder, request id, session)}: locks the name's row in
 *       {@code names} (the counter and the current tenure), then the sessions involved; grants
 *       when the name is free, its holder's session has expired by the database's clock, or it is
 *       this holder's own older tenure; a retry of the same request gets the same tenure back.
 *       A grant increments the name's counter (the fencing token), writes the lease row and
 *       renews the caller's session.</li>
 *   <li>renew: no statement of its own: answered from the session's last heartbeat. Once per
 *       heartbeat interval, one {@code heartbeat(session)} per session renews it and lists the
 *       lease rows on it; a held tenure whose row is gone (an operator's {@code DELETE}) is lost at
 *       once, and a row that no tenure of this process stands for is released.</li>
 *   <li>confirm (acquire() while holding): a heartbeat of the tenure's session now.</li>
 *   <li>release: {@code release(name, holder, token)}: frees the name if that tenure is its
 *       current one and deletes its lease row; anything else is left alone.</li>
 *   <li>abandon: {@code abandon(name, holder, request id)}: as release, for the tenure that request
 *       made, if any.</li>
 * </ul>
 *
 * <p>An operator's {@code DELETE} of a lease row leaves the name's row in {@code names}: it keeps
 * everyone else out until the holder released (after it learned of the delete) or its session
 * expired.
 */
final class PostgresLeaseStore implements LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(PostgresLeaseStore.class);

  private final String uri;
  private final Database db;
  private final String schema;
  private final LeaseRuntime runtime;
  private final OpenLeases leases;
  private final String owner;
  /** One slot per TTL (milliseconds): its current session and its heartbeat. */
  private final Map<Long, Slot> slots = new ConcurrentHashMap<>();
  /** The tenures this backend holds, by lease name. */
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  /** Acquires in flight per lease name: their rows are not orphans yet. */
  private final Map<String, Integer> acquiring = new ConcurrentHashMap<>();
  private volatile boolean closed;

  PostgresLeaseStore(String uri, Database db, LeaseRuntime runtime, OpenLeases leases) {
    this.uri = uri;
    this.db = db;
    this.schema = db.schema();
    this.runtime = runtime;
    this.leases = leases;
    String host;
    try {
      host = java.net.InetAddress.getLocalHost().getHostName();
    } catch (java.net.UnknownHostException | SecurityException e) {
      host = "unknown-host";
    }
    this.owner = "pid " + ProcessHandle.current().pid() + "@" + host;
  }

  /** A held tenure and the session it is recorded on. */
  private record Held(HolderId holder, long requestId, long token, PostgresSession session, long since) {}

  /** The sessions of one TTL, one at a time, and their heartbeat. */
  private final class Slot {
    final long ttlMillis;
    long intervalNanos = Long.MAX_VALUE; // guarded by this
    long timeoutNanos = Long.MAX_VALUE; // guarded by this
    PostgresSession current; // guarded by this
    CompletableFuture<PostgresSession> opening; // guarded by this
    boolean beating; // guarded by this
    boolean inFlight; // guarded by this

    Slot(long ttlMillis) {
      this.ttlMillis = ttlMillis;
    }

    synchronized void use(Duration heartbeat, Duration timeout) {
      intervalNanos = Math.min(intervalNanos, heartbeat.toNanos());
      timeoutNanos = Math.min(timeoutNanos, Math.min(heartbeat.toNanos(), timeout.toNanos()));
    }

    synchronized long timeoutMillis() {
      return networkTimeout(timeoutNanos);
    }

    /** {@return the live session, opening one if there is none} */
    CompletableFuture<PostgresSession> session() {
      synchronized (this) {
        if (current != null && current.ended() == null) {
          return CompletableFuture.completedFuture(current);
        }
        if (opening != null) {
          return opening;
        }
        CompletableFuture<PostgresSession> o = opening = new CompletableFuture<>();
        long sent = runtime.ticker().read();
        db.work("opening a session", timeoutMillis(), c -> openSession(c, ttlMillis))
            .whenComplete(
                (id, error) -> {
                  synchronized (this) {
                    opening = null;
                    if (error == null) {
                      current = new PostgresSession(id, ttlMillis, sent);
                    }
                  }
                  if (error != null) {
                    o.completeExceptionally(error);
                  } else {
                    startBeating();
                    o.complete(current());
                  }
                });
        return o;
      }
    }

    synchronized PostgresSession current() {
      return current;
    }

    synchronized void forget(PostgresSession ended) {
      if (current == ended) {
        current = null;
      }
    }

    private void startBeating() {
      long interval;
      synchronized (this) {
        if (beating || closed) {
          return;
        }
        beating = true;
        interval = intervalNanos;
      }
      runtime.timers().schedule(this::tick, interval);
    }

    private void tick() {
      PostgresSession s;
      long interval;
      synchronized (this) {
        s = current;
        interval = intervalNanos;
        if (closed || s == null) {
          beating = false; // the next session starts it again
          return;
        }
        if (!inFlight) {
          inFlight = true;
        } else {
          s = null; // the last heartbeat has not answered yet: do not queue another behind it
        }
      }
      if (s != null) {
        PostgresSession session = s;
        heartbeat(session, true).whenComplete((ok, error) -> {
          synchronized (this) {
            inFlight = false;
          }
        });
      }
      runtime.timers().schedule(this::tick, interval);
    }
  }

  static long networkTimeout(long nanos) {
    // The engine gives up on a call after its own timeout; the connection waits twice as long (1 s
    // at least) before it is cut, so a slow answer can still be used and a dead peer frees the
    // thread.
    return Math.max(1_000, 2 * TimeUnit.NANOSECONDS.toMillis(nanos));
  }

  /** Makes sure leases of {@code ttl} have a slot that beats at least every {@code heartbeat}. */
  void register(Duration ttl, Duration heartbeat, Duration timeout) {
    Slot slot = slots.computeIfAbsent(ttl.toMillis(), Slot::new);
    slot.use(heartbeat, timeout);
    // Opened now, so that the first acquire is one statement; a failure is left to the acquire,
    // which opens again.
    slot.session();
  }

  /** For tests and warm-up: opens the session of {@code ttl} now. */
  CompletableFuture<Void> warmUp(Duration ttl) {
    Slot slot = slots.get(ttl.toMillis());
    return slot == null ? CompletableFuture.completedFuture(null) : slot.session().thenRun(() -> {});
  }

  private long openSession(Connection c, long ttlMillis) throws SQLException {
    try (PreparedStatement s = c.prepareStatement("SELECT " + schema + ".open_session(?, ?)")) {
      s.setString(1, owner);
      s.setLong(2, ttlMillis);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire.

  /** The answer of the acquire function. */
  private record Outcome(String outcome, long token, String holder) {}

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    Slot slot = slots.get(request.ttl().toMillis());
    if (slot == null) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("no session for TTL " + request.ttl()));
    }
    String name = request.leaseName();
    acquiring.merge(name, 1, Integer::sum);
    long deadline = request.sentAtNanos() + request.timeout().toNanos();
    return attempt(request, slot, true, deadline)
        .whenComplete((answer, error) -> acquiring.computeIfPresent(name, (k, n) -> n == 1 ? null : n - 1));
  }

  private CompletableFuture<AcquireResult> attempt(
      AcquireRequest request, Slot slot, boolean mayReopen, long deadline) {
    return slot.session()
        .thenCompose(
            session -> {
              long sent = runtime.ticker().read();
              return db.work(
                      "the acquire of '" + request.leaseName() + "'",
                      networkTimeout(request.timeout().toNanos()),
                      c -> callAcquire(c, request, session))
                  .thenCompose(
                      o -> switch (o.outcome()) {
                        case "acquired" -> CompletableFuture.completedFuture(
                            granted(request, session, o.token(), sent));
                        case "held" -> CompletableFuture.<AcquireResult>completedFuture(
                            new AcquireResult.HeldElsewhere(o.holder() != null ? o.holder() : ""));
                        case "no-session" -> {
                          sessionEnded(slot, session, "the database has no live session " + session.id
                              + " any more (it expired by the database's clock or was deleted)");
                          // Nothing was written: one more try on a new session answers this
                          // request, while its holder still waits.
                          if (mayReopen && runtime.ticker().read() - deadline < 0) {
                            yield attempt(request, slot, false, deadline);
                          }
                          yield CompletableFuture.<AcquireResult>failedFuture(
                              new io.leasehold.LeaseStoreUnavailableException(
                                  uri + ": the session for the acquire of '" + request.leaseName()
                                      + "' ended before it arrived", null));
                        }
                        default -> CompletableFuture.<AcquireResult>failedFuture(
                            new LeaseProtocolException(
                                uri + ": the acquire function answered '" + o.outcome() + "'", null));
                      });
            });
  }

  private Outcome callAcquire(Connection c, AcquireRequest request, PostgresSession session)
      throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement("SELECT r_outcome, r_token, r_holder FROM " + schema + ".acquire(?, ?, ?, ?)")) {
      s.setString(1, request.leaseName());
      s.setString(2, request.holder().toString());
      s.setLong(3, request.requestId());
      s.setLong(4, session.id);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return new Outcome(r.getString(1), r.getLong(2), r.getString(3));
      }
    }
  }

  private AcquireResult granted(AcquireRequest request, PostgresSession session, long token, long sent) {
    // The acquire renewed the whole session on its way: every lease on it may count from here.
    session.renewed(sent);
    Held mine = new Held(request.holder(), request.requestId(), token, session, runtime.ticker().read());
    held.compute(
        request.leaseName(),
        (name, before) -> before != null && before.token > token ? before : mine);
    if (session.ended() != null) {
      // The session ended between the grant and this answer; its end may have missed the tenure.
      report(request.leaseName(), request.holder(), token,
          new LeaseLost(LeaseLost.Kind.REVOKED, session.ended()));
    }
    return new AcquireResult.Acquired(token, sent);
  }

  // ---------------------------------------------------------------------------------------------
  // Renew, confirm, release, abandon.

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    Held h = held.get(tenure.leaseName());
    if (h == null || h.token != tenure.token() || !h.holder.equals(tenure.holder())) {
      return CompletableFuture.completedFuture(gone(tenure));
    }
    PostgresSession session = h.session;
    if (session.ended() != null) {
      return CompletableFuture.completedFuture(
          new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, session.ended())));
    }
    if (session.failures() == 0) {
      return CompletableFuture.completedFuture(new RenewResult.Renewed(session.lastOkSentAt()));
    }
    // Heartbeats are failing: answer with the next one's outcome, shared by every lease on it.
    return session.nextHeartbeat().thenApply(sent -> {
      if (sent == null || session.ended() != null) {
        return new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, String.valueOf(session.ended())));
      }
      return stillHeld(tenure) ? new RenewResult.Renewed(sent) : gone(tenure);
    });
  }

  /** A heartbeat of the tenure's session, sent now: the answer reflects the table as of now. */
  @Override
  public CompletableFuture<RenewResult> confirm(Tenure tenure, long sentAtNanos) {
    Held h = held.get(tenure.leaseName());
    if (h == null || h.token != tenure.token() || !h.holder.equals(tenure.holder())) {
      return CompletableFuture.completedFuture(gone(tenure));
    }
    return heartbeat(h.session, false).thenApply(sent -> {
      if (sent == null) {
        return new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED, String.valueOf(h.session.ended())));
      }
      return stillHeld(tenure) ? new RenewResult.Renewed(sent) : gone(tenure);
    });
  }

  private boolean stillHeld(Tenure tenure) {
    Held now = held.get(tenure.leaseName());
    return now != null && now.token == tenure.token() && now.holder.equals(tenure.holder());
  }

  private RenewResult gone(Tenure tenure) {
    return new RenewResult.Lost(new LeaseLost(LeaseLost.Kind.REVOKED,
        "the database no longer records tenure " + tenure.token() + " of '" + tenure.leaseName()
            + "' (its row in " + schema + ".leases was deleted or replaced)"));
  }

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    forget(tenure.leaseName(), tenure.token());
    return db.work("the release of '" + tenure.leaseName() + "'", timeoutMillis(tenure.ttl()),
        c -> {
          callRelease(c, tenure.leaseName(), tenure.holder().toString(), tenure.token());
          return null;
        });
  }

  private void callRelease(Connection c, String name, String holder, long token) throws SQLException {
    try (PreparedStatement s = c.prepareStatement("SELECT " + schema + ".release(?, ?, ?)")) {
      s.setString(1, name);
      s.setString(2, holder);
      s.setLong(3, token);
      s.executeQuery().close();
    }
  }

  @Override
  public CompletableFuture<Void> abandon(AcquireRequest request) {
    Held h = held.get(request.leaseName());
    if (h != null && h.holder.equals(request.holder()) && h.requestId == request.requestId()) {
      forget(request.leaseName(), h.token);
    }
    return db.work("the abandon of request " + request.requestId() + " of '" + request.leaseName() + "'",
        timeoutMillis(request.ttl()),
        c -> {
          try (PreparedStatement s = c.prepareStatement("SELECT " + schema + ".abandon(?, ?, ?)")) {
            s.setString(1, request.leaseName());
            s.setString(2, request.holder().toString());
            s.setLong(3, request.requestId());
            s.executeQuery().close();
          }
          return null;
        });
  }

  // ---------------------------------------------------------------------------------------------
  // Attached keys and reads.

  @Override
  public boolean supportsAttach() {
    return true;
  }

  @Override
  public CompletableFuture<Boolean> attach(Tenure tenure, String key, String value) {
    return db.work("the attach of key '" + key + "' to '" + tenure.leaseName() + "'",
        timeoutMillis(tenure.ttl()),
        c -> {
          try (PreparedStatement s = c.prepareStatement("SELECT " + schema + ".attach(?, ?, ?, ?, ?)")) {
            s.setString(1, tenure.leaseName());
            s.setString(2, tenure.holder().toString());
            s.setLong(3, tenure.token());
            s.setString(4, key);
            s.setString(5, value);
            try (ResultSet r = s.executeQuery()) {
              r.next();
              return r.getBoolean(1);
            }
          }
        });
  }

  /** What {@code read_lease} answered. */
  record Read(String state, String holder, long token, long remainingMillis, Map<String, String> attached) {
    boolean held() {
      return "held".equals(state);
    }

    io.leasehold.LeaseState toState(String name) {
      return new io.leasehold.LeaseState(name,
          held() ? Optional.of(new io.leasehold.LeaseHolding(holder, token, Optional.empty())) : Optional.empty(),
          held() ? attached : Map.of());
    }
  }

  CompletableFuture<Read> read(String name) {
    return db.work("reading '" + name + "'", 10_000, c -> callRead(c, name));
  }

  private Read callRead(Connection c, String name) throws SQLException {
    try (PreparedStatement s = c.prepareStatement("SELECT r_state, r_holder, r_token, r_remaining_ms,"
        + " r_keys, r_values FROM " + schema + ".read_lease(?)")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        String[] keys = strings(r.getArray(5));
        String[] values = strings(r.getArray(6));
        Map<String, String> attached = new HashMap<>();
        for (int i = 0; i < keys.length; i++) {
          attached.put(keys[i], values[i]);
        }
        return new Read(r.getString(1), r.getString(2), r.getLong(3), r.getLong(4), attached);
      }
    }
  }

  private long timeoutMillis(Duration ttl) {
    Slot slot = slots.get(ttl.toMillis());
    return slot != null ? slot.timeoutMillis() : networkTimeout(ttl.toNanos());
  }

  // ---------------------------------------------------------------------------------------------
  // Heartbeats.

  /** What a heartbeat found: the session lives, and these lease rows are recorded on it. */
  private record Beat(boolean alive, Map<String, Long> tokens, Map<String, String> holders) {}

  /**
   * Renews {@code session} (one statement for every lease on it) and compares the lease rows on
   * it with the tenures held. Completes with the send time once it answered, {@code null} if the
   * session has ended; exceptionally if the database could not be asked.
   */
  private CompletableFuture<Long> heartbeat(PostgresSession session, boolean onHeartbeatThread) {
    long sent = runtime.ticker().read();
    Slot slot = slots.get(session.ttlMillis);
    long timeout = slot != null ? slot.timeoutMillis() : networkTimeout(TimeUnit.MILLISECONDS.toNanos(session.ttlMillis));
    Database.Call<Beat> call = c -> callHeartbeat(c, session.id);
    CompletableFuture<Beat> beat = onHeartbeatThread
        ? db.beat("the heartbeat of session " + session.id, timeout, call)
        : db.work("the heartbeat of session " + session.id, timeout, call);
    return beat.handle((b, error) -> {
      if (error != null) {
        if (onHeartbeatThread) {
          log.debug("The heartbeat of session {} on {} failed: {}", session.id, uri, error.toString());
          session.failed(error);
        }
        throw Database.wrapped(error);
      }
      if (!b.alive()) {
        if (slot != null) {
          sessionEnded(slot, session, "the database has no live session " + session.id
              + " any more: it expired by the database's clock (no heartbeat arrived within its"
              + " TTL) or was ended");
        }
        return null;
      }
      compare(session, sent, b);
      session.renewed(sent);
      return sent;
    });
  }

  private Beat callHeartbeat(Connection c, long sessionId) throws SQLException {
    try (PreparedStatement s = c.prepareStatement(
        "SELECT r_alive, r_names, r_tokens, r_holders FROM " + schema + ".heartbeat(?)")) {
      s.setLong(1, sessionId);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        if (!r.getBoolean(1)) {
          return new Beat(false, Map.of(), Map.of());
        }
        String[] names = strings(r.getArray(2));
        Long[] tokens = longs(r.getArray(3));
        String[] holders = strings(r.getArray(4));
        Map<String, Long> t = new HashMap<>();
        Map<String, String> h = new HashMap<>();
        for (int i = 0; i < names.length; i++) {
          t.put(names[i], tokens[i]);
          h.put(names[i], holders[i]);
        }
        return new Beat(true, t, h);
      }
    }
  }

  private static String[] strings(Array a) throws SQLException {
    return a == null ? new String[0] : (String[]) a.getArray();
  }

  private static Long[] longs(Array a) throws SQLException {
    return a == null ? new Long[0] : (Long[]) a.getArray();
  }

  /**
   * A held tenure on the session (held since before the heartbeat was sent) whose row is not
   * listed was deleted or replaced in the database: lost now. A listed row that no tenure of this
   * process stands for, with no acquire of its name in flight, is one whose holder never learned
   * of it (its answer was lost, its abandon failed): released, so the shared heartbeat never keeps
   * it alive.
   */
  private void compare(PostgresSession session, long sent, Beat beat) {
    List<Map.Entry<String, Held>> missing = new ArrayList<>();
    for (Map.Entry<String, Held> e : held.entrySet()) {
      Held h = e.getValue();
      Long token = beat.tokens().get(e.getKey());
      if (h.session == session && h.since - sent < 0 && (token == null || token != h.token)) {
        missing.add(e);
      }
    }
    for (Map.Entry<String, Held> e : missing) {
      report(e.getKey(), e.getValue().holder, e.getValue().token, new LeaseLost(LeaseLost.Kind.REVOKED,
          "the row of '" + e.getKey() + "' in " + schema + ".leases is gone (deleted in the database);"
              + " found by the heartbeat of session " + session.id));
    }
    for (Map.Entry<String, Long> row : beat.tokens().entrySet()) {
      String name = row.getKey();
      Held h = held.get(name);
      if ((h == null || h.token != row.getValue()) && !acquiring.containsKey(name)) {
        String holder = beat.holders().get(name);
        log.debug("Releasing the row of '{}' (token {}) on session {}: no holder here stands for it",
            name, row.getValue(), session.id);
        db.work("the release of orphaned '" + name + "'", timeoutMillis(Duration.ofMillis(session.ttlMillis)),
            c -> {
              callRelease(c, name, holder, row.getValue());
              return null;
            });
      }
    }
  }

  private void sessionEnded(Slot slot, PostgresSession session, String reason) {
    session.end(reason);
    slot.forget(session);
    for (Map.Entry<String, Held> e : held.entrySet()) {
      if (e.getValue().session == session) {
        report(e.getKey(), e.getValue().holder, e.getValue().token,
            new LeaseLost(LeaseLost.Kind.REVOKED, reason));
      }
    }
  }

  private void forget(String leaseName, long token) {
    held.computeIfPresent(leaseName, (name, h) -> h.token == token ? null : h);
  }

  /** Ends a tenure the database no longer has; the deadline's own verdict goes first if it passed. */
  private void report(String leaseName, HolderId holder, long token, LeaseLost reason) {
    forget(leaseName, token);
    Optional<ManagedLease> lease = leases.find(holder);
    if (lease.isPresent()) {
      lease.get().checkAlive();
      lease.get().storeReportedLoss(token, reason);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Close.

  /**
   * Stops the heartbeats. With {@code endSessions}, ends this backend's sessions in the database
   * (waiting at most {@code wait}), so that nothing it recorded outlives it; without, leaves them
   * to expire, as a crashed process would.
   */
  void close(boolean endSessions, Duration wait) {
    closed = true;
    if (!endSessions) {
      return;
    }
    List<CompletableFuture<Void>> ends = new ArrayList<>();
    for (Slot slot : slots.values()) {
      PostgresSession s = slot.current();
      if (s != null && s.ended() == null) {
        ends.add(db.work("closing session " + s.id, wait.toMillis(), c -> {
          try (CallableStatement st = c.prepareCall("SELECT " + schema + ".close_session(?)")) {
            st.setLong(1, s.id);
            st.execute();
          }
          return null;
        }));
      }
    }
    try {
      CompletableFuture.allOf(ends.toArray(CompletableFuture[]::new))
          .get(wait.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.debug("Could not end every session of {} on close; they expire within their TTL: {}",
          uri, e.toString());
    }
  }
}
