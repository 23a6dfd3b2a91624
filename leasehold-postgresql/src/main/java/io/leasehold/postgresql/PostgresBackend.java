package io.leasehold.postgresql;

import io.leasehold.BackendUris;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.OpenObservations;
import io.leasehold.spi.SecretFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The PostgreSQL backend: leases are rows of {@code <schema>.leases}, recorded on one row of
 * {@code <schema>.sessions} per backend and TTL that one heartbeat statement renews per interval,
 * however many leases the backend holds. Expiry is judged by the database's clock ({@code
 * clock_timestamp()} when it receives a renewal), never by the application's. The fencing token is
 * a per-name counter in {@code <schema>.names}, kept apart from the lease rows, so it goes on
 * growing after an operator deletes a lease row.
 *
 * <p><b>Schema.</b> Created on first use in the schema the URI names ({@code schema=}, default
 * {@code leasehold}) from the shipped {@code V1__leasehold.sql}, unless the URI says {@code
 * create-schema=false}: then the script must have been applied (with a migration tool, say), and
 * the backend refuses a schema without it or of a newer version. See {@code docs/postgresql.md}.
 *
 * <p><b>Revocation.</b> A {@code DELETE} of a held lease's row does not free the name: its row in
 * {@code names} keeps it from everyone else until the holder, which learns of the delete at its
 * next heartbeat, has stopped and released, or until its session expired.
 *
 * <p><b>Failover.</b> A connection that drops ends tenures at their local deadlines unless
 * renewals resume in time (the session rows live in the database and survive a restart of it); a
 * read-only server (a replica) is refused with an error that says so.
 *
 * <p><b>Poolers.</b> Every operation of the lease contract is one statement in its own
 * transaction, and nothing lives in a connection's session state (no advisory locks, no named
 * prepared statements), so leases work through a transaction-mode pooler such as PgBouncer. {@link
 * #observe} is the exception: it {@code LISTEN}s on a connection of its own, which must reach the
 * server directly.
 *
 * <p><b>Observing and attached keys.</b> Supported: notifications at commit with the name's counter
 * as revision ({@code GAP} where the listener missed some), and keys in {@code <schema>.attached}
 * that end with their tenure.
 */
public final class PostgresBackend implements LeaseBackend {

  /**
   * The shortest TTL: the database's clock and the statements' round trips must fit in it many
   * times over.
   */
  public static final Duration MIN_TTL = Duration.ofMillis(100);

  private final PostgresUri uri;
  private final Database db;
  private final LeaseRuntime runtime;
  private final boolean ownsRuntime;
  private final OpenLeases leases;
  private final PostgresLeaseStore store;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final OpenObservations observations = new OpenObservations();
  private final PostgresObservation.Listener listener;

  private PostgresBackend(PostgresUri uri, char[] password, LeaseRuntime runtime, boolean ownsRuntime) {
    this.uri = uri;
    this.runtime = runtime;
    this.ownsRuntime = ownsRuntime;
    this.db = new Database(uri, password);
    this.leases = new OpenLeases(uri.canonical());
    this.store = new PostgresLeaseStore(uri.canonical(), db, runtime, leases);
    this.listener = new PostgresObservation.Listener(db);
    db.warm();
  }

  /**
   * Opens a backend with its own timer and callback threads. Starts connecting without waiting: a
   * database that cannot be reached now makes the first acquires fail, not the open ({@link
   * #connected()} tells early).
   *
   * @param uri {@code postgresql://host[:port][,host[:port]...]/database[?schema=NAME&user=NAME
   *     &password-file=FILE&sslmode=MODE&sslrootcert=FILE&create-schema=true|false&connections=N]}
   * @return the backend; the caller closes it
   * @throws IllegalArgumentException if the URI is malformed or its password file unreadable (the
   *     message names the part)
   */
  public static PostgresBackend open(String uri) {
    return builder(uri).build();
  }

  /**
   * Opens a backend on a runtime the caller owns (tests freeze its timers to simulate a pause).
   * Closing the backend leaves the runtime alone.
   *
   * @param uri as for {@link #open(String)}
   * @param runtime the clock and threads every lease and heartbeat of this backend runs on
   * @return the backend; the caller closes it
   */
  public static PostgresBackend open(String uri, LeaseRuntime runtime) {
    return builder(uri).runtime(runtime).build();
  }

  /**
   * {@return a builder of a backend on the database {@code uri} names}
   *
   * @param uri as for {@link #open(String)}
   */
  public static Builder builder(String uri) {
    return new Builder(Objects.requireNonNull(uri, "uri"));
  }

  /**
   * Builds a {@link PostgresBackend}: the URI plus a password given in code. {@link #toString()}
   * never shows the password.
   */
  public static final class Builder {
    private final String uri;
    private char[] password;
    private LeaseRuntime runtime;

    private Builder(String uri) {
      this.uri = uri;
    }

    /**
     * The user's password, for programs that hold it already (a secret store); instead of the
     * URI's {@code password-file}. Copied; the caller may clear its array.
     *
     * @param password the password, not empty
     * @return this builder
     */
    public Builder password(char[] password) {
      Objects.requireNonNull(password, "password");
      if (password.length == 0) {
        throw new IllegalArgumentException("password must not be empty");
      }
      this.password = password.clone();
      return this;
    }

    /**
     * Runs the backend on a runtime the caller owns (closing the backend leaves it alone).
     *
     * @param runtime the clock and threads
     * @return this builder
     */
    public Builder runtime(LeaseRuntime runtime) {
      this.runtime = Objects.requireNonNull(runtime, "runtime");
      return this;
    }

    /**
     * Checks everything, reads the password file, then makes the backend (no connection yet).
     *
     * @return the backend; the caller closes it
     * @throws IllegalArgumentException naming the part that is wrong
     */
    public PostgresBackend build() {
      PostgresUri parsed = PostgresUri.parse(uri);
      if (password != null && parsed.passwordFile() != null) {
        throw new IllegalArgumentException(
            "PostgreSQL backend: give the password either as password-file or as password(...), not both");
      }
      char[] secret = password != null ? password.clone() : readPassword(parsed.passwordFile());
      return runtime != null
          ? new PostgresBackend(parsed, secret, runtime, false)
          : new PostgresBackend(parsed, secret, LeaseRuntime.system("postgresql"), true);
    }

    @Override
    public String toString() {
      return "PostgresBackend.Builder[" + BackendUris.redacted(uri)
          + (password != null ? ", password=" + BackendUris.HIDDEN : "") + "]";
    }
  }

  /** The password in {@code file}, without one trailing line break; null without a file. */
  static char[] readPassword(Path file) {
    if (file == null) {
      return null;
    }
    // As libpq refuses a ~/.pgpass that the group or others may read.
    SecretFiles.requireOwnerOnly(file, "PostgreSQL backend: password-file '" + file + "'");
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "PostgreSQL backend: password-file '" + file + "' cannot be read: " + e, e);
    }
    if (text.endsWith("\n")) {
      text = text.substring(0, text.length() - (text.endsWith("\r\n") ? 2 : 1));
    }
    if (text.isEmpty()) {
      throw new IllegalArgumentException(
          "PostgreSQL backend: password-file '" + file + "' is empty; it must hold the password");
    }
    char[] chars = text.toCharArray();
    return Arrays.copyOf(chars, chars.length);
  }

  /**
   * {@inheritDoc}
   *
   * <p>On PostgreSQL: {@code ttl} at least {@link #MIN_TTL}; the database keeps it to the
   * millisecond.
   */
  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    if (settings.ttl().compareTo(MIN_TTL) < 0) {
      throw new IllegalArgumentException(
          "ttl must be at least " + MIN_TTL.toMillis() + " ms on PostgreSQL; was "
              + settings.ttl().toMillis() + " ms");
    }
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to make leases");
    }
    store.register(settings.ttl(), settings.heartbeatInterval(), settings.operationTimeout());
    return leases.newLease(settings, store, runtime);
  }

  /**
   * {@inheritDoc}
   *
   * <p>On PostgreSQL: a read of the name's row, then the notifications the acquire and release
   * functions send at commit, on one listening connection per backend (which must reach the
   * server directly, not through a transaction-mode pooler); the name's counter tells whether one
   * was missed ({@code GAP} with the state read again), and an expiry is read when the database
   * says the holder's session would expire. See {@code docs/postgresql.md}.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to observe");
    }
    return observations.open(name, observer, runtime.callbacks(),
        observation -> new PostgresObservation(listener, store, runtime.timers(), observation));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On PostgreSQL: one call of {@code read_lease}, one snapshot: the tenure live now by the
   * database's clock and its attached keys.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    return store.read(name).thenApply(r -> r.toState(name));
  }

  /**
   * {@return completes once a connection is open, reaches a writable primary and finds the schema
   * ready (creating it if allowed)} Fails with the reason otherwise; acquires try again by
   * themselves.
   */
  public CompletableFuture<Void> connected() {
    return db.work("connecting", 10_000, c -> null);
  }

  /**
   * For tests: opens the session of {@code settings.ttl()} now, as a process that has been up a
   * while has, so that a first acquire is one round trip.
   */
  CompletableFuture<Void> warmUp(LeaseSettings settings) {
    store.register(settings.ttl(), settings.heartbeatInterval(), settings.operationTimeout());
    return store.warmUp(settings.ttl());
  }

  /** {@return the observers' listening connection, for tests} */
  PostgresObservation.Listener listener() {
    return listener;
  }

  /** {@return the lease store, for tests that drive the SPI directly} */
  PostgresLeaseStore store() {
    return store;
  }

  /** {@return the schema this backend's tables are in} */
  public String schema() {
    return uri.schema();
  }

  @Override
  public String uri() {
    return uri.canonical();
  }

  /** Releases every lease, ends the sessions, and disconnects. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    leases.closeAll();
    store.close(true, Duration.ofSeconds(1));
    shutdown(false);
  }

  /**
   * For tests: the process dies. No release, no goodbye: the sessions and the leases on them stay
   * in the database until their TTL runs out by its clock.
   */
  void closeAbruptly() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    store.close(false, Duration.ZERO);
    shutdown(true);
  }

  private void shutdown(boolean abruptly) {
    observations.closeAll();
    listener.stop();
    db.close(abruptly);
    if (ownsRuntime) {
      runtime.close();
    }
  }

  @Override
  public String toString() {
    return "PostgresBackend{" + uri() + (closed.get() ? ", closed" : "") + '}';
  }
}
