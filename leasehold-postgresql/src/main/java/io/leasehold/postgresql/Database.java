package io.leasehold.postgresql;

import io.leasehold.LeaseException;
import io.leasehold.LeaseStoreUnavailableException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connections of one backend and the threads that use them. JDBC blocks, so every call runs
 * on a thread of its own pool and completes a future: a few worker threads for acquire, release
 * and the like, each with its own connection, and one heartbeat thread with its own connection,
 * so that a session's renewal never queues behind a slow acquire.
 *
 * <p>No connection pool library: the backend needs a fixed handful of long-lived connections,
 * one per thread, reopened when one breaks; a pool would add a dependency, its own timeouts and
 * its own idea of a broken connection for no gain. Nothing is kept in these connections' session
 * state (no {@code SET}, no advisory lock, no {@code LISTEN}, no server-side prepared statement),
 * so a transaction-mode pooler in between changes nothing; only the observers' listening
 * connection ({@link #openOwn()}) keeps a {@code LISTEN}.
 *
 * <p>Each new connection is checked to reach a writable primary ({@code pg_is_in_recovery()},
 * {@code transaction_read_only}), and the first one makes sure the schema is there in the version
 * this backend speaks.
 */
final class Database implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Database.class);

  /** The schema version this backend speaks (the {@code V1__leasehold.sql} it ships). */
  static final int SCHEMA_VERSION = 1;

  static final String SCRIPT = "V1__leasehold.sql";

  /** A call on a connection. */
  interface Call<T> {
    T run(Connection c) throws SQLException;
  }

  private final PostgresUri uri;
  private final String name;
  private final Properties properties;
  private final org.postgresql.Driver driver = new org.postgresql.Driver();
  private final ExecutorService workers;
  private final ExecutorService heartbeats;
  private final ThreadLocal<Connection> connection = new ThreadLocal<>();
  private final Set<Connection> open = ConcurrentHashMap.newKeySet();
  private final Object schemaLock = new Object();
  private volatile boolean schemaReady;
  private volatile boolean closed;

  Database(PostgresUri uri, char[] password) {
    this.uri = uri;
    this.name = uri.canonical();
    this.properties = new Properties();
    if (uri.user() != null) {
      properties.setProperty("user", uri.user());
    }
    if (password != null) {
      properties.setProperty("password", new String(password));
    }
    if (uri.sslMode() != null) {
      properties.setProperty("sslmode", uri.sslMode());
    }
    if (uri.sslRootCert() != null) {
      properties.setProperty("sslrootcert", uri.sslRootCert().toString());
    }
    properties.setProperty("ApplicationName", "leasehold");
    // Several hosts: the primary among them, as libpq's target_session_attrs=read-write. With one
    // host the backend's own check below says more plainly why a replica is refused.
    if (uri.hosts().size() > 1) {
      properties.setProperty("targetServerType", "primary");
    }
    // Unnamed statements only: nothing a transaction-mode pooler could hand to another client.
    properties.setProperty("prepareThreshold", "0");
    properties.setProperty("connectTimeout", "5");
    properties.setProperty("tcpKeepAlive", "true");
    AtomicInteger n = new AtomicInteger();
    this.workers =
        Executors.newFixedThreadPool(
            uri.connections(), task -> daemon(task, "leasehold-postgresql-" + n.incrementAndGet()));
    this.heartbeats =
        Executors.newSingleThreadExecutor(task -> daemon(task, "leasehold-postgresql-heartbeat"));
  }

  private static Thread daemon(Runnable task, String name) {
    Thread t = new Thread(task, name);
    t.setDaemon(true);
    return t;
  }

  /**
   * Starts opening every connection now, without waiting, so that a first acquire finds them
   * ready: a connection's set-up (TCP, TLS, SCRAM, the checks) costs more than one statement.
   * Failures are left to the calls, which open again.
   */
  void warm() {
    for (int i = 0; i < uri.connections(); i++) {
      work("connecting", 10_000, c -> null);
    }
    beat("connecting", 10_000, c -> null);
  }

  String schema() {
    return uri.schema();
  }

  /** Runs {@code call} on a worker connection; {@code timeoutMillis} bounds its network waits. */
  <T> CompletableFuture<T> work(String what, long timeoutMillis, Call<T> call) {
    return submit(workers, what, timeoutMillis, call);
  }

  /** Runs {@code call} on the heartbeat connection. */
  <T> CompletableFuture<T> beat(String what, long timeoutMillis, Call<T> call) {
    return submit(heartbeats, what, timeoutMillis, call);
  }

  private <T> CompletableFuture<T> submit(
      ExecutorService executor, String what, long timeoutMillis, Call<T> call) {
    CompletableFuture<T> result = new CompletableFuture<>();
    try {
      executor.execute(() -> run(result, what, timeoutMillis, call));
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(
          new LeaseStoreUnavailableException(name + ": the backend is closed; " + what + " not sent", e));
    }
    return result;
  }

  /**
   * Runs a call; once more on a new connection if the one it found was broken — after a server
   * restart every idle connection is, and its first statement fails with 57P01 or 08006. Every
   * call of the store may run twice: each is idempotent by design (an acquire by its request id,
   * a release by its token, a heartbeat by its session), which is also what makes a retry after a
   * lost answer safe.
   */
  private <T> void run(CompletableFuture<T> result, String what, long timeoutMillis, Call<T> call) {
    for (int attempt = 1; ; attempt++) {
      Connection c = null;
      boolean fresh = connection.get() == null;
      try {
        c = connection(timeoutMillis);
        c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, timeoutMillis));
        result.complete(call.run(c));
        return;
      } catch (SQLException e) {
        boolean broken = c != null && broken(c, e);
        if (broken) {
          drop(c);
        }
        if (broken && !fresh && attempt == 1 && !closed) {
          log.debug("A connection to {} was broken ({}); {} again on a new one", name, e.getSQLState(), what);
          continue;
        }
        result.completeExceptionally(failure(what, e));
        return;
      } catch (RuntimeException | Error e) {
        result.completeExceptionally(e);
        return;
      }
    }
  }

  /** This thread's connection, opened (and checked) if it has none. */
  private Connection connection(long timeoutMillis) throws SQLException {
    Connection c = connection.get();
    if (c != null && !c.isClosed()) {
      return c;
    }
    if (closed) {
      throw new LeaseStoreUnavailableException(name + ": the backend is closed", null);
    }
    c = driver.connect(uri.jdbcUrl(), properties);
    if (c == null) {
      throw new SQLException("the PostgreSQL driver does not accept " + uri.jdbcUrl());
    }
    open.add(c);
    try {
      c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, Math.max(timeoutMillis, 5_000)));
      refuseReadOnly(c);
      ensureSchema(c);
    } catch (SQLException | RuntimeException e) {
      drop(c);
      throw e;
    }
    connection.set(c);
    return c;
  }

  /**
   * Opens a connection of its own, checked as every other, for a caller that keeps it (the
   * observers' {@code LISTEN}); the caller closes it.
   */
  Connection openOwn() throws SQLException {
    if (closed) {
      throw new LeaseStoreUnavailableException(name + ": the backend is closed", null);
    }
    Connection c = driver.connect(uri.jdbcUrl(), properties);
    if (c == null) {
      throw new SQLException("the PostgreSQL driver does not accept " + uri.jdbcUrl());
    }
    try {
      c.setNetworkTimeout(Runnable::run, 5_000);
      refuseReadOnly(c);
      ensureSchema(c);
      c.setNetworkTimeout(Runnable::run, 0);
    } catch (SQLException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  boolean isClosed() {
    return closed;
  }

  String name() {
    return name;
  }

  /** A replica (or a server or database set read-only) cannot hold leases: say so plainly. */
  private void refuseReadOnly(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")) {
      r.next();
      boolean recovery = r.getBoolean(1);
      String readOnly = r.getString(2);
      if (recovery || "on".equals(readOnly)) {
        throw new LeaseStoreUnavailableException(
            name + ": the server is read-only (pg_is_in_recovery() = " + recovery
                + ", transaction_read_only = " + readOnly + "); leases need the primary, writable"
                + " server: name it in the URI (with several hosts the backend picks the primary)",
            null);
      }
    }
  }

  /**
   * Makes sure the schema holds this backend's tables: applies the shipped script if it does not
   * and the URI allows it; refuses a schema of a newer version.
   */
  private void ensureSchema(Connection c) throws SQLException {
    if (schemaReady) {
      return;
    }
    synchronized (schemaLock) {
      if (schemaReady) {
        return;
      }
      int version = schemaVersion(c);
      if (version > SCHEMA_VERSION) {
        throw new LeaseStoreUnavailableException(
            name + ": schema " + uri.schema() + " is at Leasehold schema version " + version
                + ", newer than this backend's " + SCHEMA_VERSION + "; upgrade leasehold-postgresql",
            null);
      }
      if (version < SCHEMA_VERSION) {
        if (!uri.createSchema()) {
          throw new LeaseStoreUnavailableException(
              name + ": schema " + uri.schema() + " has no Leasehold tables (create-schema=false);"
                  + " apply " + SCRIPT + " (in leasehold-postgresql's jar, see docs/postgresql.md)"
                  + " or allow create-schema",
              null);
        }
        applyScript(c);
      }
      schemaReady = true;
    }
  }

  private int schemaVersion(Connection c) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery(
            "SELECT to_regclass('" + uri.schema() + ".schema_version') IS NOT NULL")) {
      r.next();
      if (!r.getBoolean(1)) {
        return 0;
      }
    }
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery(
            "SELECT coalesce(max(version), 0) FROM " + uri.schema() + ".schema_version")) {
      r.next();
      return r.getInt(1);
    }
  }

  /**
   * Applies the script in one transaction. Two processes doing it at once may collide on the
   * catalog (a unique violation); the one that loses tries once more and then finds it done.
   */
  private void applyScript(Connection c) throws SQLException {
    String script = script(uri.schema());
    for (int attempt = 1; ; attempt++) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute(script);
        c.commit();
        log.info("Created the Leasehold tables (schema version {}) in schema {} of {}",
            SCHEMA_VERSION, uri.schema(), name);
        return;
      } catch (SQLException e) {
        c.rollback();
        if (attempt == 2 || !"23505".equals(e.getSQLState()) && !"42P07".equals(e.getSQLState())) {
          throw e;
        }
      } finally {
        c.setAutoCommit(true);
      }
    }
  }

  /** {@return the shipped schema script with {@code ${schema}} replaced} */
  static String script(String schema) {
    try (InputStream in = Database.class.getResourceAsStream(SCRIPT)) {
      if (in == null) {
        throw new IllegalStateException(SCRIPT + " is missing from leasehold-postgresql's jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${schema}", schema);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + SCRIPT, e);
    }
  }

  private static boolean broken(Connection c, SQLException e) {
    String state = e.getSQLState();
    // 08: connection exceptions; 57P01-57P03: the server shut down or restarts.
    if (state != null && (state.startsWith("08") || state.startsWith("57P"))) {
      return true;
    }
    try {
      return c.isClosed();
    } catch (SQLException again) {
      return true;
    }
  }

  private void drop(Connection c) {
    open.remove(c);
    if (connection.get() == c) {
      connection.remove();
    }
    try {
      c.close();
    } catch (SQLException e) {
      log.debug("Closing a broken connection to {} failed: {}", name, e.toString());
    }
  }

  /** Turns a driver failure into the API's, with what was attempted and the SQLSTATE. */
  LeaseException failure(String what, SQLException e) {
    String state = e.getSQLState();
    String detail = e.getMessage();
    if (detail != null && detail.contains("targetServerType")) {
      detail = "none of the hosts " + uri.hosts() + " is a writable primary (each is read-only, a"
          + " replica in recovery, or unreachable): " + detail;
    } else if ("25006".equals(state)) {
      detail += " — the server is read-only (a replica?); leases need the writable primary";
    } else if ("28P01".equals(state) || "28000".equals(state)) {
      detail += " — check user, password-file, PGPASSFILE and pg_hba.conf";
    } else if ("42501".equals(state)) {
      detail += " — the user lacks a right on schema " + uri.schema()
          + " (see the grants in docs/postgresql.md)";
    }
    return new LeaseStoreUnavailableException(
        name + ": " + what + " failed: " + detail + (state != null ? " (SQLSTATE " + state + ")" : ""), e);
  }

  static CompletionException wrapped(Throwable e) {
    return e instanceof CompletionException ce ? ce : new CompletionException(e);
  }

  /**
   * Closes every connection and stops the threads. With {@code abruptly}, the sockets are cut as
   * a dying process's would be: no goodbye to the server.
   */
  @Override
  public void close() {
    close(false);
  }

  void close(boolean abruptly) {
    closed = true;
    workers.shutdown();
    heartbeats.shutdown();
    for (Connection c : open) {
      try {
        if (abruptly) {
          c.abort(Runnable::run);
        } else {
          c.close();
        }
      } catch (SQLException e) {
        log.debug("Closing a connection to {} failed: {}", name, e.toString());
      }
    }
    open.clear();
    workers.shutdownNow();
    heartbeats.shutdownNow();
  }
}
