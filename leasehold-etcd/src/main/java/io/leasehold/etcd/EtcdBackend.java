package io.leasehold.etcd;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.leasehold.BackendUris;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.spi.OpenObservations;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.OpenLeases;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd v3 backend: leases are keys under {@code <namespace>/leases/<name>} (namespace {@code
 * /leasehold} unless the URI says {@code ?namespace=/path}), attached to one etcd lease per TTL
 * that this backend keeps alive once per heartbeat interval, however many leases it holds. The
 * fencing token is the key's create revision.
 *
 * <p><b>Secured etcd.</b> {@code etcds://} reaches the members over TLS ({@code ca}, and {@code
 * cert} + {@code key} when etcd runs with {@code --client-cert-auth}); {@code user} and {@code
 * password-file} authenticate as an etcd user. The URI or the {@link #builder builder} gives them;
 * see {@code docs/etcd.md}. A refusal by etcd (wrong password, no permission on the namespace, a
 * failed TLS handshake) fails the operation with a {@link io.leasehold.LeaseStoreUnavailableException}
 * that says so.
 *
 * <p><b>TTL.</b> etcd lease TTLs are whole seconds: a lease's {@code ttl} must be at least 1 s and
 * is rounded up to whole seconds for the store, which therefore keeps a record up to a second
 * longer than the holder believes it has it, never shorter. etcd may raise a TTL to its own
 * minimum (1.5 election timeouts, rounded up); the holder still stops at its own deadline.
 *
 * <p><b>Store failover.</b> A new etcd leader re-arms every lease to its full TTL, so a store
 * failover never shortens a tenure; a holder whose keep-alives fail for longer than its safe
 * window during the election loses the lease at its deadline, before anyone can take it over.
 */
public final class EtcdBackend implements LeaseBackend {

  private static final Logger log = LoggerFactory.getLogger(EtcdBackend.class);

  /** The shortest TTL an etcd lease can have. */
  public static final Duration MIN_TTL = Duration.ofSeconds(1);

  private final EtcdUri uri;
  private final Client client;
  private final LeaseRuntime runtime;
  private final boolean ownsRuntime;
  private final OpenLeases leases;
  private final EtcdLeaseStore store;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final CompletableFuture<Void> connected;
  private final OpenObservations observations = new OpenObservations();

  private EtcdBackend(EtcdUri uri, EtcdAccess access, LeaseRuntime runtime, boolean ownsRuntime) {
    this(uri, access, runtime, ownsRuntime, UnaryOperator.identity());
  }

  private EtcdBackend(
      EtcdUri uri,
      EtcdAccess access,
      LeaseRuntime runtime,
      boolean ownsRuntime,
      UnaryOperator<ClientBuilder> adjust) {
    this.uri = uri;
    this.runtime = runtime;
    this.ownsRuntime = ownsRuntime;
    this.client = adjust.apply(access.apply(Client.builder().endpoints(uri.endpoints()))).build();
    this.leases = new OpenLeases(uri.canonical());
    this.store = new EtcdLeaseStore(uri.canonical(), client, uri.namespace(), runtime, leases, access);
    if (access.user() != null && !access.secure() && !loopbackOnly(uri)) {
      log.warn("etcd backend {}: the password of user '{}' crosses the network unencrypted (an"
          + " etcd:// URI is plaintext); reach etcd over TLS with etcds://", uri.canonical(), access.user());
    }
    connected = store.ensureWatch(); // connect now, so the first acquire needs one round trip less
  }

  private static boolean loopbackOnly(EtcdUri uri) {
    for (java.net.URI e : uri.endpoints()) {
      String host = e.getHost();
      if (!(host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]"))) {
        return false;
      }
    }
    return true;
  }

  /**
   * Opens a backend with its own timer and callback threads. Starts connecting to etcd (it reads
   * the current revision and starts the watch) without waiting; an etcd that cannot be reached
   * now makes the first acquires fail, not the open.
   *
   * @param uri {@code etcd://host:port[,host:port...][?namespace=/path][&user=NAME&password-file=FILE]},
   *     or over TLS {@code etcds://host:port[,...]?ca=FILE[&cert=FILE&key=FILE][&...]}
   * @return the backend; the caller closes it
   * @throws IllegalArgumentException if the URI is malformed or a file it names is missing,
   *     unreadable or not what it should be (the message says which part)
   */
  public static EtcdBackend open(String uri) {
    Objects.requireNonNull(uri, "uri");
    return builder(uri).build();
  }

  /**
   * Opens a backend on a runtime the caller owns (tests freeze its timers to simulate a pause).
   * Closing the backend leaves the runtime alone.
   *
   * @param uri as for {@link #open(String)}
   * @param runtime the clock and threads every lease and keep-alive of this backend runs on
   * @return the backend; the caller closes it
   * @throws IllegalArgumentException if the URI is malformed
   */
  public static EtcdBackend open(String uri, LeaseRuntime runtime) {
    Objects.requireNonNull(uri, "uri");
    return builder(uri).runtime(runtime).build();
  }

  /**
   * For tests: like {@link #open(String, LeaseRuntime)}, with the jetcd client adjusted (tests add
   * interceptors that lose replies).
   */
  static EtcdBackend open(String uri, LeaseRuntime runtime, UnaryOperator<ClientBuilder> client) {
    EtcdUri parsed = EtcdUri.parse(uri);
    return new EtcdBackend(parsed, EtcdAccess.load(parsed, null), runtime, false, client);
  }

  /**
   * {@return a builder of a backend on the etcd members {@code uri} names} The URI may carry every
   * parameter ({@code ca}, {@code cert}, {@code key}, {@code user}, {@code password-file}); the
   * builder can give them instead, as files or, for the password, as characters from a secret
   * store. A parameter given both ways is refused.
   *
   * @param uri {@code etcd://host:port[,host:port...][?...]} or {@code etcds://...} for TLS
   */
  public static Builder builder(String uri) {
    return new Builder(Objects.requireNonNull(uri, "uri"));
  }

  /**
   * Builds an {@link EtcdBackend}: the URI plus TLS files and credentials given in code. Every
   * file is read and checked by {@link #build()}, which opens nothing and starts no thread when
   * something is wrong. {@link #toString()} never shows the password.
   */
  public static final class Builder {
    private final String uri;
    private Path ca;
    private Path cert;
    private Path key;
    private String user;
    private Path passwordFile;
    private char[] password;
    private LeaseRuntime runtime;

    private Builder(String uri) {
      this.uri = uri;
    }

    /**
     * The authorities that issued the members' certificates (PEM); the URI must be {@code
     * etcds://}.
     *
     * @param file a readable PEM file of one or more certificates
     * @return this builder
     */
    public Builder ca(Path file) {
      this.ca = Objects.requireNonNull(file, "ca");
      return this;
    }

    /**
     * The client certificate to show etcd (when it runs with {@code --client-cert-auth}).
     *
     * @param certFile the client's certificate chain, PEM
     * @param keyFile its private key, PEM PKCS#8
     * @return this builder
     */
    public Builder clientCertificate(Path certFile, Path keyFile) {
      this.cert = Objects.requireNonNull(certFile, "cert");
      this.key = Objects.requireNonNull(keyFile, "key");
      return this;
    }

    /**
     * The etcd user to authenticate as; its password comes from {@link #passwordFile} or {@link
     * #password}.
     *
     * @param name the user name
     * @return this builder
     */
    public Builder user(String name) {
      Objects.requireNonNull(name, "user");
      if (name.isEmpty() || name.chars().anyMatch(Character::isISOControl)) {
        throw new IllegalArgumentException("user must be a non-empty name without control characters");
      }
      this.user = name;
      return this;
    }

    /**
     * The file holding the user's password (one trailing line break is not part of it).
     *
     * @param file a readable file
     * @return this builder
     */
    public Builder passwordFile(Path file) {
      this.passwordFile = Objects.requireNonNull(file, "passwordFile");
      return this;
    }

    /**
     * The user's password, for programs that hold it already (a secret store). Copied; the
     * caller may clear its array.
     *
     * @param password the password, not empty
     * @return this builder
     */
    public Builder password(char[] password) {
      Objects.requireNonNull(password, "password");
      this.password = password.clone();
      return this;
    }

    /**
     * Runs the backend on a runtime the caller owns (closing the backend leaves it alone);
     * without one the backend makes its own timer and callback threads.
     *
     * @param runtime the clock and threads
     * @return this builder
     */
    public Builder runtime(LeaseRuntime runtime) {
      this.runtime = Objects.requireNonNull(runtime, "runtime");
      return this;
    }

    /**
     * Reads and checks everything, then opens the backend. Starts connecting without waiting.
     *
     * @return the backend; the caller closes it
     * @throws IllegalArgumentException naming the parameter (and its file) that is wrong, before
     *     anything is opened
     */
    public EtcdBackend build() {
      EtcdUri parts = EtcdUri.parseParts(uri);
      if (password != null && (passwordFile != null || parts.passwordFile() != null)) {
        throw new IllegalArgumentException(
            "etcd backend: give the password either as password-file or as password(...), not both");
      }
      EtcdUri parsed =
          parts.with(
                  either("ca", parts.ca(), ca),
                  either("cert", parts.cert(), cert),
                  either("key", parts.key(), key),
                  either("user", parts.user(), user),
                  either("password-file", parts.passwordFile(), passwordFile))
              .checked(uri);
      EtcdAccess access = EtcdAccess.load(parsed, password);
      // Threads only once everything checked out.
      return runtime != null
          ? new EtcdBackend(parsed, access, runtime, false)
          : new EtcdBackend(parsed, access, LeaseRuntime.system("etcd"), true);
    }

    private static <T> T either(String parameter, T inUri, T given) {
      if (inUri != null && given != null) {
        throw new IllegalArgumentException(
            "etcd backend: " + parameter + " is given both in the URI and to the builder; give it once");
      }
      return inUri != null ? inUri : given;
    }

    @Override
    public String toString() {
      return "EtcdBackend.Builder[" + BackendUris.redacted(uri)
          + (ca != null ? ", ca=" + ca : "")
          + (cert != null ? ", cert=" + cert + ", key=" + key : "")
          + (user != null ? ", user=" + user : "")
          + (passwordFile != null ? ", password-file=" + passwordFile : "")
          + (password != null ? ", password=" + BackendUris.HIDDEN : "") + "]";
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>etcd's limit: {@code ttl} at least {@link #MIN_TTL}; fractions of a second are rounded up
   * for the store.
   */
  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    if (settings.ttl().compareTo(MIN_TTL) < 0) {
      throw new IllegalArgumentException(
          "ttl must be at least 1 s on etcd (etcd lease TTLs are whole seconds; longer ones are"
              + " rounded up); was " + settings.ttl().toMillis() + " ms");
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
   * <p>On etcd: a read of the lease's key, then a watch of it from the revision after the read,
   * resumed from the revision after the last event whenever the watch fails; a compacted revision
   * gives {@code GAP} and a fresh read. Why a key was deleted (released, expired, deleted by an
   * operator) is told from its guard and its etcd lease; see {@code docs/etcd.md}.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to observe");
    }
    return observations.open(
        name, observer, runtime.callbacks(), observation ->
            new EtcdObservation(client, runtime.timers(), observation, store.key(name), store.guardKey(name)));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On etcd: one linearizable transaction reads the lease's key and its attached keys at one
   * revision.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed.get()) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    return store.read(name);
  }

  @Override
  public String uri() {
    return uri.canonical();
  }

  /**
   * {@return completes once this backend first reached etcd and started its watch} Fails if the
   * first attempt failed; acquires try again by themselves.
   */
  public CompletableFuture<Void> connected() {
    return connected.copy();
  }

  /**
   * For tests: makes the session of {@code settings.ttl()} and grants its etcd lease, as a
   * process that has been up a while has, so that a first acquire is one round trip.
   *
   * @return completes once the session lease is granted
   */
  CompletableFuture<Void> warmUp(LeaseSettings settings) {
    return store.register(settings.ttl(), settings.heartbeatInterval(), settings.operationTimeout());
  }

  /** {@return the lease store, for tests that drive the SPI directly} */
  EtcdLeaseStore store() {
    return store;
  }

  /** For tests: the watch delivers nothing from now on, as one whose server went silent. */
  void silenceWatch() {
    store.silenceWatch();
  }

  /** {@return the etcd key of the guard that blocks lease {@code name} while its holder lives} */
  String guardKeyOf(String name) {
    return store.guardKey(name);
  }

  /** {@return the etcd key that holds the record of lease {@code name}} */
  public String keyOf(String name) {
    return store.key(name);
  }

  /**
   * Releases every lease, revokes the session leases, and disconnects. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    leases.closeAll();
    store.close(true, Duration.ofSeconds(1));
    shutdown();
  }

  /**
   * For tests: the process dies. No release, no revoke: the session leases and the keys on them
   * stay in etcd until their TTL runs out.
   */
  void closeAbruptly() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    store.close(false, Duration.ZERO);
    shutdown();
  }

  private void shutdown() {
    observations.closeAll();
    client.close();
    if (ownsRuntime) {
      runtime.close();
    }
  }

  @Override
  public String toString() {
    return "EtcdBackend{" + uri() + (closed.get() ? ", closed" : "") + '}';
  }
}
