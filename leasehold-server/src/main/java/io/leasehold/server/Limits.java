package io.leasehold.server;

import io.leasehold.server.edge.LimitChecks;
import java.time.Duration;

/**
 * Limits that keep one client from exhausting a node: each is checked where a request arrives
 * (see {@code LimitChecks}), and a request over one is refused with {@code RESOURCE_EXHAUSTED}
 * naming the limit by its flag of {@code leasehold server} and its value; nothing changes, and the
 * node keeps serving every other client. Sessions per client identity are limited with access
 * control (docs/security.md).
 *
 * @param maxKeysPerSession keys (named leases included) attached to one session, and keys
 *     attached to one tenure, 1 to {@value #MOST_KEYS_PER_SESSION} ({@code --max-keys-per-session})
 * @param maxKeyBytes bytes (UTF-8) of a key a client names in a put, compare-and-set, delete or
 *     get, {@value #LEAST_KEY_BYTES} to {@value #MOST_KEY_BYTES} ({@code --max-key-bytes}); keys
 *     under the reserved prefix (named leases) are bounded by the lease-name rule instead
 * @param maxValueBytes bytes of a value, {@value #LEAST_VALUE_BYTES} to {@value #MOST_VALUE_BYTES}
 *     ({@code --max-value-bytes})
 * @param maxWatchersPerConnection watches open at once on one client connection, 1 to {@value
 *     #MOST_PER_CONNECTION} ({@code --max-watchers-per-connection})
 * @param maxWatchBacklog events a watcher that reads too slowly may fall behind before its watch
 *     is ended (it re-watches from the revision it was told), 1 to {@value #MOST_WATCH_BACKLOG}
 *     ({@code --max-watch-backlog})
 * @param maxInFlightPerConnection calls other than watches open at once on one client
 *     connection (an open keep-alive stream counts as one), {@value #LEAST_IN_FLIGHT} to {@value
 *     #MOST_PER_CONNECTION} ({@code --max-in-flight-per-connection})
 * @param watchHistoryBytes bytes (serialized events) of the watch history the node keeps so that
 *     watchers can resume from a past revision, {@value #LEAST_WATCH_HISTORY_BYTES} to {@value
 *     #MOST_WATCH_HISTORY_BYTES} ({@code --watch-history-bytes}); also at most {@value
 *     #WATCH_HISTORY_EVENTS} events. Oldest events go first; a watcher resuming from before what
 *     is kept is told to re-read
 * @param maxConnectionAge how long a client connection may live: then the node asks the client to
 *     reconnect (HTTP/2 GOAWAY, ±10 % jitter) and ends what still runs on it {@value
 *     #CONNECTION_AGE_GRACE_SECONDS} s later; {@link #LEAST_CONNECTION_AGE} to {@link
 *     #MOST_CONNECTION_AGE} ({@code --max-connection-age}). It bounds how long a connection keeps
 *     what it was given when it was made: a certificate whose CA was removed from the trust file,
 *     a watch whose right was revoked
 * @param handshakeTimeout how long a new client connection may take to finish its TLS (or
 *     plaintext HTTP/2) handshake before it is closed, {@link #LEAST_HANDSHAKE_TIMEOUT} to {@link
 *     #MOST_HANDSHAKE_TIMEOUT} ({@code --handshake-timeout}): connections held open half-made cannot
 *     pile up
 * @param maxConnections client connections a node holds open at once, counted from when a
 *     connection is accepted (before its handshake), 1 to {@value #MOST_CONNECTIONS} ({@code
 *     --max-connections}): one over it is closed at once, so a flood of connections cannot take
 *     the file descriptors and memory the node needs for its log, its snapshots and its peers
 * @param maxConnectionsPerAddress client connections open at once from one IP address, 1 to
 *     {@value #MOST_CONNECTIONS} ({@code --max-connections-per-address}): one host cannot take all
 *     of {@code --max-connections} from the others
 * @param maxDataBytes data bytes the replicated state may hold ({@link
 *     io.leasehold.server.replicated.CoreState#dataBytes()}: keys, values, session owners, and a
 *     fixed charge per entry) before writes that add data are refused, {@value #LEAST_DATA_BYTES}
 *     to {@value #MOST_DATA_BYTES} ({@code --max-data-bytes}); deletes, releases, revokes,
 *     keep-alives and reads still go, so the cluster can be drained
 */
public record Limits(
    int maxKeysPerSession,
    int maxKeyBytes,
    int maxValueBytes,
    int maxWatchersPerConnection,
    int maxWatchBacklog,
    int maxInFlightPerConnection,
    long watchHistoryBytes,
    Duration maxConnectionAge,
    Duration handshakeTimeout,
    int maxConnections,
    int maxConnectionsPerAddress,
    long maxDataBytes) {

  /** Default {@code --max-connection-age}. */
  public static final Duration DEFAULT_MAX_CONNECTION_AGE = Duration.ofMinutes(30);

  /** Shortest {@code --max-connection-age}. */
  public static final Duration LEAST_CONNECTION_AGE = Duration.ofSeconds(1);

  /** Longest {@code --max-connection-age}. */
  public static final Duration MOST_CONNECTION_AGE = Duration.ofDays(30);

  /** Seconds the calls still open on an aged connection may go on before they are ended. */
  public static final int CONNECTION_AGE_GRACE_SECONDS = 10;

  /** Default {@code --handshake-timeout} (gRPC's own is 120 s). */
  public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

  /** Shortest {@code --handshake-timeout}. */
  public static final Duration LEAST_HANDSHAKE_TIMEOUT = Duration.ofSeconds(1);

  /** Longest {@code --handshake-timeout}. */
  public static final Duration MOST_HANDSHAKE_TIMEOUT = Duration.ofSeconds(120);

  /**
   * Default {@code --max-connections}: far more than a cluster's clients need (a client process
   * keeps one connection to each node it talks to), far fewer than the file descriptors a JVM
   * gets on Linux (it raises its soft limit to the hard one, 524,288 under systemd's default).
   */
  public static final int DEFAULT_MAX_CONNECTIONS = 10_000;

  /**
   * Default {@code --max-connections-per-address}: room for a host running many client processes,
   * or many clients behind one NAT address, while one host cannot take all the connections.
   */
  public static final int DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 1_000;

  /** The most {@code --max-connections} (and per address) that may be configured. */
  public static final int MOST_CONNECTIONS = 1_000_000;

  /** Default keys per session: as many as {@code bench hold --leases} puts in one client's session. */
  public static final int DEFAULT_KEYS_PER_SESSION = 1_000_000;

  /** The most keys per session that may be configured. */
  public static final int MOST_KEYS_PER_SESSION = 10_000_000;

  /** Default and most key bytes: every key is held on every node and sent in every event. */
  public static final int MOST_KEY_BYTES = 4096;

  /** The least key bytes that may be configured: a short key still names something. */
  public static final int LEAST_KEY_BYTES = 16;

  /**
   * Default and most value bytes: a write must fit one gRPC message (4 MiB) and one Raft entry
   * with room to spare.
   */
  public static final int MOST_VALUE_BYTES = 1024 * 1024;

  /** The least value bytes: every value the Lease API may attach (4,096 characters of UTF-8) fits. */
  public static final int LEAST_VALUE_BYTES = 16 * 1024;

  /** Default watches per connection: a backend opens one, plus one per lease it observes. */
  public static final int DEFAULT_WATCHERS_PER_CONNECTION = 1000;

  /** Default events a slow watcher may fall behind. */
  public static final int DEFAULT_WATCH_BACKLOG = 10_000;

  /**
   * The most events a slow watcher may fall behind: the history a node keeps for re-watching. A
   * watcher further behind could not resume from it anyway.
   */
  public static final int MOST_WATCH_BACKLOG = 100_000;

  /**
   * Bytes of responses a slow watcher may fall behind by, whatever {@code --max-watch-backlog}
   * allows in events: 32 MiB, twice the largest answer the client library accepts (16 MiB), so a
   * watcher that can read every answer is never ended for one. Without it, 10,000 events of
   * 1 MiB values were 10 GB held for one watcher that does not read.
   */
  public static final int WATCH_BACKLOG_BYTES = 32 << 20;

  /** Default calls in flight per connection: the client library has a few (batched writes). */
  public static final int DEFAULT_IN_FLIGHT_PER_CONNECTION = 1000;

  /**
   * The least calls in flight per connection: a client keeps a keep-alive stream open and sends
   * writes and reads beside it.
   */
  public static final int LEAST_IN_FLIGHT = 8;

  /** Default bytes of watch history: 64 MiB. */
  public static final long DEFAULT_WATCH_HISTORY_BYTES = 64L << 20;

  /** The least bytes of watch history: more than the largest event (a 1 MiB value, a 4 KiB key). */
  public static final long LEAST_WATCH_HISTORY_BYTES = 2L << 20;

  /** The most bytes of watch history that may be configured: 16 GiB. */
  public static final long MOST_WATCH_HISTORY_BYTES = 16L << 30;

  /** Events of watch history at most, whatever their bytes. */
  public static final int WATCH_HISTORY_EVENTS = MOST_WATCH_BACKLOG;

  /**
   * Bytes of one request message a node's client port accepts (gRPC refuses a larger one with
   * {@code RESOURCE_EXHAUSTED} before the node reads it): the largest single write (a key of
   * {@value #MOST_KEY_BYTES} bytes and a value of {@value #MOST_VALUE_BYTES}, about 1.05 MiB) with
   * room to spare, and a {@code Batch} of the client library's (at most 256 writes, each of a
   * value the Lease API attaches, about 3.7 MiB at most). A {@code Batch} must fit as a whole.
   * The same as gRPC's default, and a default client's for what it receives.
   */
  public static final int MAX_REQUEST_BYTES = 4 << 20;

  /** The most watches or calls per connection that may be configured. */
  public static final int MOST_PER_CONNECTION = 1_000_000;

  /**
   * The most keys one page of a prefix read answers ({@code GetRequest.limit} above it gets this
   * many). Not configurable: a page is copied out under the state's lock, so it stays short.
   */
  public static final int MAX_PAGE_KEYS = 10_000;

  /**
   * The bytes of keys one page of a prefix read answers: a page ends before the key that would
   * take it past this, but holds at least one key, so a page is at most this plus one key and its
   * value ({@link #MOST_KEY_BYTES} + {@link #MOST_VALUE_BYTES}), about 2 MiB: well inside the 4 MiB
   * a gRPC client accepts by default.
   */
  public static final int MAX_PAGE_BYTES = 1024 * 1024;

  /**
   * The bytes an unpaged prefix read ({@code GetRequest.limit} 0, what clients before paged reads
   * send) may answer: gRPC's default inbound limit. A read that would answer more is refused
   * ({@code RESOURCE_EXHAUSTED}) rather than sent to a client that could not take it.
   */
  public static final int MAX_UNPAGED_BYTES = 4 * 1024 * 1024;

  /**
   * Default {@code --max-data-bytes}: 64 MiB, what fits the shipped 1 GiB heap (deploy/kubernetes)
   * by the documented sizing, 256 MB plus about 3 KB of heap per lease (docs/running-the-core.md):
   * at 64 MiB a state of the smallest entries, each charged about {@value
   * io.leasehold.server.replicated.CoreState#DATA_BYTES_PER_ENTRY} bytes, has about 250,000 of
   * them, some 750 MB by that rule; a state of large values holds 64 MiB of them, twice while a
   * snapshot loads. The 100,000 held leases the heap is sized for take about half of it. With a
   * larger heap, raise it by one twelfth of what the heap grows (3 KB per 256 bytes charged).
   */
  public static final long DEFAULT_DATA_BYTES = 64L << 20;

  /** The least {@code --max-data-bytes}: 1 MiB, room for one largest value and a few thousand leases. */
  public static final long LEAST_DATA_BYTES = 1L << 20;

  /** The most {@code --max-data-bytes} that may be configured: 1 TiB. */
  public static final long MOST_DATA_BYTES = 1L << 40;

  /** The defaults. */
  public static final Limits DEFAULTS =
      new Limits(
          DEFAULT_KEYS_PER_SESSION,
          MOST_KEY_BYTES,
          MOST_VALUE_BYTES,
          DEFAULT_WATCHERS_PER_CONNECTION,
          DEFAULT_WATCH_BACKLOG,
          DEFAULT_IN_FLIGHT_PER_CONNECTION,
          DEFAULT_WATCH_HISTORY_BYTES,
          DEFAULT_MAX_CONNECTION_AGE,
          DEFAULT_HANDSHAKE_TIMEOUT,
          DEFAULT_MAX_CONNECTIONS,
          DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
          DEFAULT_DATA_BYTES);

  /**
   * Checks every value against its range.
   *
   * @throws IllegalArgumentException naming the flag, its range and the value
   */
  public Limits {
    check("--max-keys-per-session", maxKeysPerSession, 1, MOST_KEYS_PER_SESSION);
    check("--max-key-bytes", maxKeyBytes, LEAST_KEY_BYTES, MOST_KEY_BYTES);
    check("--max-value-bytes", maxValueBytes, LEAST_VALUE_BYTES, MOST_VALUE_BYTES);
    check("--max-watchers-per-connection", maxWatchersPerConnection, 1, MOST_PER_CONNECTION);
    check("--max-watch-backlog", maxWatchBacklog, 1, MOST_WATCH_BACKLOG);
    check("--max-in-flight-per-connection", maxInFlightPerConnection, LEAST_IN_FLIGHT, MOST_PER_CONNECTION);
    check("--watch-history-bytes", watchHistoryBytes, LEAST_WATCH_HISTORY_BYTES, MOST_WATCH_HISTORY_BYTES);
    check("--max-connection-age", maxConnectionAge, LEAST_CONNECTION_AGE, MOST_CONNECTION_AGE);
    check("--handshake-timeout", handshakeTimeout, LEAST_HANDSHAKE_TIMEOUT, MOST_HANDSHAKE_TIMEOUT);
    check("--max-connections", maxConnections, 1, MOST_CONNECTIONS);
    check("--max-connections-per-address", maxConnectionsPerAddress, 1, MOST_CONNECTIONS);
    check("--max-data-bytes", maxDataBytes, LEAST_DATA_BYTES, MOST_DATA_BYTES);
  }

  /**
   * The limits with the default watch history (the form before it was a setting).
   *
   * @param maxKeysPerSession keys attached to one session
   * @param maxKeyBytes bytes of a key
   * @param maxValueBytes bytes of a value
   * @param maxWatchersPerConnection watches open at once on one connection
   * @param maxWatchBacklog events a slow watcher may fall behind
   * @param maxInFlightPerConnection calls other than watches open at once on one connection
   */
  public Limits(
      int maxKeysPerSession,
      int maxKeyBytes,
      int maxValueBytes,
      int maxWatchersPerConnection,
      int maxWatchBacklog,
      int maxInFlightPerConnection) {
    this(
        maxKeysPerSession,
        maxKeyBytes,
        maxValueBytes,
        maxWatchersPerConnection,
        maxWatchBacklog,
        maxInFlightPerConnection,
        DEFAULT_WATCH_HISTORY_BYTES,
        DEFAULT_MAX_CONNECTION_AGE,
        DEFAULT_HANDSHAKE_TIMEOUT,
        DEFAULT_MAX_CONNECTIONS,
        DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
        DEFAULT_DATA_BYTES);
  }

  private static void check(String flag, long value, long least, long most) {
    if (value < least || value > most) {
      throw new IllegalArgumentException(flag + " must be " + least + " to " + most + "; was " + value);
    }
  }

  private static void check(String flag, Duration value, Duration least, Duration most) {
    if (value == null || value.compareTo(least) < 0 || value.compareTo(most) > 0) {
      throw new IllegalArgumentException(
          flag + " must be " + seconds(least) + " to " + seconds(most) + "; was " + (value == null ? "none" : seconds(value)));
    }
  }

  /** A duration as the flag takes it (the command line has no unit above hours). */
  private static String seconds(Duration d) {
    return io.leasehold.server.raft.PeerSettings.format(d.toMillis());
  }

  /** {@return a copy with another keys-per-session limit} */
  public Limits withMaxKeysPerSession(int n) {
    return new Limits(
        n, maxKeyBytes, maxValueBytes, maxWatchersPerConnection, maxWatchBacklog, maxInFlightPerConnection, watchHistoryBytes,
        maxConnectionAge, handshakeTimeout, maxConnections, maxConnectionsPerAddress, maxDataBytes);
  }

  /** {@return a copy with another watchers-per-connection limit} */
  public Limits withMaxWatchersPerConnection(int n) {
    return new Limits(
        maxKeysPerSession, maxKeyBytes, maxValueBytes, n, maxWatchBacklog, maxInFlightPerConnection, watchHistoryBytes,
        maxConnectionAge, handshakeTimeout, maxConnections, maxConnectionsPerAddress, maxDataBytes);
  }

  /** {@return a copy with another bound on the watch history's bytes} */
  public Limits withWatchHistoryBytes(long n) {
    return new Limits(
        maxKeysPerSession, maxKeyBytes, maxValueBytes, maxWatchersPerConnection, maxWatchBacklog, maxInFlightPerConnection, n,
        maxConnectionAge, handshakeTimeout, maxConnections, maxConnectionsPerAddress, maxDataBytes);
  }

  /** {@return a copy with another connection age and handshake timeout} */
  public Limits withConnections(Duration age, Duration handshake) {
    return new Limits(
        maxKeysPerSession, maxKeyBytes, maxValueBytes, maxWatchersPerConnection, maxWatchBacklog, maxInFlightPerConnection,
        watchHistoryBytes, age, handshake, maxConnections, maxConnectionsPerAddress, maxDataBytes);
  }

  /** {@return a copy with other caps on the connections open at once, in all and from one address} */
  public Limits withMaxConnections(int all, int perAddress) {
    return new Limits(
        maxKeysPerSession, maxKeyBytes, maxValueBytes, maxWatchersPerConnection, maxWatchBacklog, maxInFlightPerConnection,
        watchHistoryBytes, maxConnectionAge, handshakeTimeout, all, perAddress, maxDataBytes);
  }

  /** {@return a copy with another bound on the data bytes the replicated state may hold} */
  public Limits withMaxDataBytes(long n) {
    return new Limits(
        maxKeysPerSession, maxKeyBytes, maxValueBytes, maxWatchersPerConnection, maxWatchBacklog, maxInFlightPerConnection,
        watchHistoryBytes, maxConnectionAge, handshakeTimeout, maxConnections, maxConnectionsPerAddress, n);
  }
}
