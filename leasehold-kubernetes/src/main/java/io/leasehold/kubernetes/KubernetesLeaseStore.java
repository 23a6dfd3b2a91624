package io.leasehold.kubernetes;

import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseSpec;
import io.leasehold.LeaseException;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.Ticker;
import io.leasehold.spi.AcquireRequest;
import io.leasehold.spi.AcquireResult;
import io.leasehold.spi.LeaseStore;
import io.leasehold.spi.OpenLeases;
import io.leasehold.spi.RenewResult;
import io.leasehold.spi.Tenure;
import java.time.Clock;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store operations of one lease object on one Kubernetes Lease object.
 *
 * <p>Every write is a create or a replace on the {@code resourceVersion} last read, so the API
 * server applies it only if nothing changed in between; a 409 Conflict means another write won.
 * The spec is written as client-go's {@code LeaseLock} writes it: {@code holderIdentity} (the
 * {@link io.leasehold.HolderId} as {@code owner#incarnation}), {@code leaseDurationSeconds}, {@code
 * acquireTime}, {@code renewTime} (wall-clock time, for humans and client-go, never compared with
 * any clock by Leasehold) and {@code leaseTransitions}.
 *
 * <p><b>Fencing token.</b> A tenure's token is the {@code resourceVersion} of the object that its
 * granting write replaced, recorded in the annotation {@value #TOKEN_ANNOTATION}. Resource
 * versions of one resource only grow (they are the etcd revision; Kubernetes 1.35 made them
 * comparable, KEP-5504), also across a delete and re-creation of the object, which {@code
 * leaseTransitions} is not: it starts again at 0. The previous tenure's token is below the version
 * its own write made, which is at most the version the next tenure replaces, so tokens strictly
 * increase. A name without an object is therefore never granted by the create itself: a released
 * record is created first and then taken like any released record, on its version.
 *
 * <p><b>Expiry.</b> A record held by someone else is taken over only after this object has itself
 * seen the same {@code resourceVersion} for {@code leaseDurationSeconds} of the record, on its own
 * monotonic ticker, counted from the first reply that showed it — as client-go does. The holder
 * writes each renewal before that reply can show it, and its local safe deadline is shorter than
 * its TTL, so it stops before anyone may take over.
 *
 * <p><b>Deletes.</b> A held object carries the finalizer {@value #FINALIZER}, so an operator's
 * delete only marks it ({@code deletionTimestamp}) and the record of the tenure stays until the
 * name is safe to hand on: the holder's next renewal sees the mark, stops the holder and then
 * removes the finalizer; a contender that finds the object marked waits the holder's lease
 * duration out, exactly as for an expired holder, before it removes the finalizer itself. Only
 * then is the object gone, and re-created for the next tenure.
 *
 * <p>One instance per {@link io.leasehold.Lease} object: the observation of a foreign record
 * belongs to this contender. Its methods run on the backend's timer thread (the API's replies are
 * handed there) and on the threads that call the engine.
 */
final class KubernetesLeaseStore implements LeaseStore {

  private static final Logger log = LoggerFactory.getLogger(KubernetesLeaseStore.class);

  /** The lease name as the application gave it; the object name may be a mapped form of it. */
  static final String LEASE_NAME_ANNOTATION = "leasehold.io/lease-name";

  /**
   * Which {@code acquire()} call of the holder wrote the current tenure, so a retry whose reply
   * was lost finds its own tenure, and a late copy of an older call changes nothing.
   */
  static final String REQUEST_ANNOTATION = "leasehold.io/acquire-request";

  /** The current tenure's fencing token: the {@code resourceVersion} its granting write replaced. */
  static final String TOKEN_ANNOTATION = "leasehold.io/fencing-token";

  /**
   * Kept on the object while a Leasehold holder holds it, so that a delete leaves the record of
   * the tenure in place (marked for deletion) until the holder has stopped.
   */
  static final String FINALIZER = "leasehold.io/tenure";

  /** How often a release or renewal re-reads and retries after a conflict that left us holding. */
  private static final int CONFLICT_RETRIES = 3;

  /** How often one acquire attempt re-reads and writes again after losing a race to itself. */
  private static final int MAX_RACES = 2;

  /** How often one acquire attempt re-reads after a create or a finished delete lost a race. */
  private static final int MAX_STEPS = 4;

  private final LeaseApi api;
  private final String objectName;
  private final String leaseName;
  private final int durationSeconds;
  private final long timeoutNanos;
  private final Ticker ticker;
  private final Clock wallClock;
  private final OpenLeases leases;

  // Guarded by this: the foreign record this contender is waiting out.
  private String observedVersion;
  private long observedAtNanos;

  /** Our latest write that the server confirmed: the base of the next conditional write. */
  private volatile Lease lastWritten;

  KubernetesLeaseStore(
      LeaseApi api,
      String objectName,
      LeaseSettings settings,
      Ticker ticker,
      Clock wallClock,
      OpenLeases leases) {
    this.api = api;
    this.objectName = objectName;
    this.leaseName = settings.name();
    this.durationSeconds = leaseDurationSeconds(settings.ttl());
    this.timeoutNanos = settings.operationTimeout().toNanos();
    this.ticker = ticker;
    this.wallClock = wallClock;
    this.leases = leases;
  }

  /** Kubernetes keeps whole seconds: the TTL rounded up, so the store never keeps less. */
  static int leaseDurationSeconds(Duration ttl) {
    long seconds = ttl.getSeconds() + (ttl.getNano() > 0 ? 1 : 0);
    return (int) Math.min(Integer.MAX_VALUE, seconds);
  }

  String objectName() {
    return objectName;
  }

  // ---------------------------------------------------------------------------------------------
  // Acquire.

  @Override
  public CompletableFuture<AcquireResult> acquire(AcquireRequest request) {
    Deadline deadline = deadline();
    return api.get(objectName, deadline.left())
        .thenCompose(reply -> decide(request, reply, deadline, 0));
  }

  private CompletableFuture<AcquireResult> decide(
      AcquireRequest request, LeaseApi.Reply reply, Deadline deadline, int steps) {
    long seenAt = ticker.read();
    if (reply.notFound()) {
      return createReleased(request, deadline, steps);
    }
    if (!reply.ok()) {
      return heldElsewhere("");
    }
    Lease current = reply.lease();
    if (markedForDeletion(current)) {
      return deleting(request, current, seenAt, deadline, steps);
    }
    LeaseSpec spec = spec(current);
    String holder = holderOf(spec);
    String us = request.holder().toString();
    if (holder.equals(us)) {
      long requestOnRecord = requestIdOf(current);
      long tokenOnRecord = tokenOf(current);
      if (requestOnRecord == request.requestId() && tokenOnRecord > 0) {
        // A retry of this acquire() call whose reply was lost: the tenure is already ours.
        return write(renewed(current), request, tokenOnRecord, deadline, 0);
      }
      if (requestOnRecord > request.requestId()) {
        return heldElsewhere(holder); // this request is a late copy of an older call
      }
      // A tenure this holder gave up on: a new one, with a new token.
      return take(request, current, deadline, 0);
    }
    if (!holder.isEmpty() && !waitedOut(current, spec, seenAt)) {
      return heldElsewhere(holder);
    }
    if (!holder.isEmpty()) {
      log.info(
          "Lease {}/{} ('{}'): taking over from {}, whose record has not changed for {} s",
          api.namespace(), objectName, leaseName, holder, foreignDuration(spec));
    }
    return take(request, current, deadline, 0);
  }

  /**
   * Whether this contender has seen {@code current} unchanged for the record's own lease
   * duration, on its monotonic clock. The clock starts at the first reply that showed this
   * {@code resourceVersion}: the write that made it happened before that reply was sent.
   */
  private synchronized boolean waitedOut(Lease current, LeaseSpec spec, long seenAt) {
    String version = current.getMetadata().getResourceVersion();
    if (version == null || !version.equals(observedVersion)) {
      observedVersion = version;
      observedAtNanos = seenAt;
      return false;
    }
    return seenAt - observedAtNanos >= Duration.ofSeconds(foreignDuration(spec)).toNanos();
  }

  /** The record's own duration; our TTL if it has none (a record client-go would never write). */
  private int foreignDuration(LeaseSpec spec) {
    Integer d = spec.getLeaseDurationSeconds();
    return d != null && d > 0 ? d : durationSeconds;
  }

  /**
   * The object is marked for deletion. Its record stays until the finalizers are gone; ours is
   * removed, letting the API server delete the object, once nobody holds it or its holder's lease
   * duration has passed since this contender first saw the mark (the holder's renewals fail from
   * the moment of the delete, so it has stopped by then). Then the name starts afresh.
   */
  private CompletableFuture<AcquireResult> deleting(
      AcquireRequest request, Lease current, long seenAt, Deadline deadline, int steps) {
    LeaseSpec spec = spec(current);
    String holder = holderOf(spec);
    if (!finalizers(current).contains(FINALIZER)) {
      // Another party's finalizers keep it; the API server deletes it once they are gone.
      return heldElsewhere(holder);
    }
    if (!holder.isEmpty() && !waitedOut(current, spec, seenAt)) {
      log.debug(
          "Lease {}/{} ('{}') was deleted while {} held it; waiting its {} s out before making it"
              + " anew", api.namespace(), objectName, leaseName, holder, foreignDuration(spec));
      return heldElsewhere(holder);
    }
    if (!holder.isEmpty()) {
      log.info(
          "Lease {}/{} ('{}') was deleted while {} held it, and has not changed for {} s since:"
              + " finishing the delete", api.namespace(), objectName, leaseName, holder,
          foreignDuration(spec));
    }
    return api.replace(withoutFinalizer(current), deadline.left())
        .thenCompose(
            reply -> {
              if (reply.succeeded() || reply.notFound()) {
                return createReleased(request, deadline, steps + 1);
              }
              return api.get(objectName, deadline.left())
                  .thenCompose(r -> decide(request, r, deadline, steps + 1));
            });
  }

  /**
   * Makes the object as a released record (no holder), then takes it like any released record:
   * the tenure's token is the version the create made, which is above every version the name's
   * earlier objects ever had.
   */
  private CompletableFuture<AcquireResult> createReleased(
      AcquireRequest request, Deadline deadline, int steps) {
    if (steps > MAX_STEPS) {
      return CompletableFuture.failedFuture(
          new LeaseStoreUnavailableException("Lease " + api.namespace() + "/" + objectName + " was deleted and made again "
                  + steps + " times during one acquire",
              null));
    }
    ZonedDateTime now = now();
    Lease fresh =
        new LeaseBuilder()
            .withMetadata(
                new ObjectMetaBuilder()
                    .withName(objectName)
                    .withNamespace(api.namespace())
                    .withAnnotations(Map.of(LEASE_NAME_ANNOTATION, leaseName))
                    .build())
            .withNewSpec()
            .withHolderIdentity("") // as client-go leaves a released record
            .withLeaseDurationSeconds(1)
            .withAcquireTime(now)
            .withRenewTime(now)
            .withLeaseTransitions(0)
            .endSpec()
            .build();
    return api.create(fresh, deadline.left())
        .thenCompose(
            reply -> {
              if (reply.ok()) {
                return take(request, reply.lease(), deadline, 0);
              }
              if (reply.notFound()) {
                return CompletableFuture.failedFuture(
                    new LeaseStoreUnavailableException(
                        "could not create Lease " + api.namespace() + "/" + objectName
                            + ": the API server answered 404 (does namespace " + api.namespace()
                            + " exist?)",
                        null));
              }
              // 409: someone made it first, maybe an abandoned attempt of ours
              return api.get(objectName, deadline.left())
                  .thenCompose(r -> decide(request, r, deadline, steps + 1));
            });
  }

  /** Takes {@code current} for a new tenure, on its version; that version is the token. */
  private CompletableFuture<AcquireResult> take(
      AcquireRequest request, Lease current, Deadline deadline, int races) {
    long token;
    try {
      token = nextToken(current);
    } catch (LeaseException e) {
      return CompletableFuture.failedFuture(e);
    }
    ZonedDateTime now = now();
    LeaseSpec old = spec(current);
    List<String> finalizers = new ArrayList<>(finalizers(current));
    if (!finalizers.contains(FINALIZER)) {
      finalizers.add(FINALIZER);
    }
    Lease next =
        new LeaseBuilder(current)
            .editMetadata()
            .addToAnnotations(REQUEST_ANNOTATION, Long.toString(request.requestId()))
            .addToAnnotations(LEASE_NAME_ANNOTATION, leaseName)
            .addToAnnotations(TOKEN_ANNOTATION, Long.toString(token))
            .withFinalizers(finalizers)
            .endMetadata()
            .withNewSpec()
            .withHolderIdentity(request.holder().toString())
            .withLeaseDurationSeconds(durationSeconds)
            .withAcquireTime(now)
            .withRenewTime(now)
            .withLeaseTransitions(transitions(old) + 1) // as client-go counts holder changes
            .endSpec()
            .build();
    return write(next, request, token, deadline, races);
  }

  /**
   * The token of a tenure that replaces {@code current}: its {@code resourceVersion}, which must
   * be a positive integer above the token recorded on it. Anything else (an API server whose
   * versions are not etcd revisions, or an object rolled back by a restore) would not let tokens
   * only grow, so the lease is refused instead.
   */
  private long nextToken(Lease current) {
    String version = current.getMetadata().getResourceVersion();
    long token;
    try {
      token = version == null ? -1 : Long.parseLong(version);
    } catch (NumberFormatException e) {
      token = -1;
    }
    if (token <= 0) {
      throw new LeaseProtocolException("Lease " + api.namespace() + "/" + objectName + " has resourceVersion '" + version
              + "', not a positive integer: Leasehold's fencing tokens are resource versions"
              + " (comparable since Kubernetes 1.35, KEP-5504) and it grants no tenure whose token"
              + " might not be above every earlier one",
          null);
    }
    long recorded = tokenOf(current);
    if (token <= recorded) {
      throw new LeaseProtocolException("Lease " + api.namespace() + "/" + objectName + " has resourceVersion " + token
              + ", not above the fencing token " + recorded + " recorded on it (was the"
              + " cluster's etcd restored from a backup?): a new tenure would not get a greater"
              + " token, so none is granted",
          null);
    }
    return token;
  }

  private CompletableFuture<AcquireResult> write(
      Lease next, AcquireRequest request, long token, Deadline deadline, int races) {
    return api.replace(next, deadline.left())
        .thenCompose(
            reply -> {
              if (reply.ok()) {
                lastWritten = reply.lease();
                return acquired(token, request);
              }
              // 409: another write won; 404: deleted meanwhile
              return recheck(request, deadline, races);
            });
  }

  /**
   * After a lost race: reads once more. Ours under this very request means an earlier reply was
   * lost (or the HTTP layer retried); anything else is another holder's.
   */
  private CompletableFuture<AcquireResult> recheck(AcquireRequest request, Deadline deadline, int races) {
    return api.get(objectName, deadline.left())
        .thenCompose(
            reply -> {
              if (!reply.ok()) {
                return heldElsewhere("");
              }
              Lease current = reply.lease();
              LeaseSpec spec = spec(current);
              String holder = holderOf(spec);
              if (!holder.equals(request.holder().toString()) || markedForDeletion(current)) {
                return heldElsewhere(holder);
              }
              long onRecord = requestIdOf(current);
              if (onRecord == request.requestId() && tokenOf(current) > 0) {
                lastWritten = current;
                return acquired(tokenOf(current), request);
              }
              if (onRecord < request.requestId() && races < MAX_RACES) {
                // Our own older attempt, abandoned but still in flight, wrote first: replace it.
                return take(request, current, deadline, races + 1);
              }
              return heldElsewhere(holder);
            });
  }

  private static CompletableFuture<AcquireResult> acquired(long token, AcquireRequest request) {
    return CompletableFuture.completedFuture(
        new AcquireResult.Acquired(token, request.sentAtNanos()));
  }

  private static CompletableFuture<AcquireResult> heldElsewhere(String holder) {
    return CompletableFuture.completedFuture(new AcquireResult.HeldElsewhere(holder));
  }

  // ---------------------------------------------------------------------------------------------
  // Renew.

  @Override
  public CompletableFuture<RenewResult> renew(Tenure tenure, long sentAtNanos) {
    Deadline deadline = deadline();
    Lease base = lastWritten;
    if (base == null || !holds(base, tenure)) {
      return api.get(objectName, deadline.left())
          .thenCompose(r -> renewFrom(r, tenure, sentAtNanos, deadline, 0));
    }
    return renewOn(base, tenure, sentAtNanos, deadline, 0);
  }

  private CompletableFuture<RenewResult> renewOn(
      Lease base, Tenure tenure, long sentAtNanos, Deadline deadline, int conflicts) {
    return api.replace(renewed(base), deadline.left())
        .thenCompose(
            reply -> {
              if (reply.ok()) {
                lastWritten = reply.lease();
                return CompletableFuture.completedFuture(new RenewResult.Renewed(sentAtNanos));
              }
              if (reply.notFound()) {
                return CompletableFuture.completedFuture(deleted(tenure));
              }
              // 409: the object changed since our last write. Whose is it now?
              return api.get(objectName, deadline.left())
                  .thenCompose(r -> renewFrom(r, tenure, sentAtNanos, deadline, conflicts + 1));
            });
  }

  private CompletableFuture<RenewResult> renewFrom(
      LeaseApi.Reply reply, Tenure tenure, long sentAtNanos, Deadline deadline, int conflicts) {
    if (!reply.ok()) {
      return CompletableFuture.completedFuture(deleted(tenure));
    }
    Lease current = reply.lease();
    if (!holds(current, tenure)) {
      return CompletableFuture.completedFuture(new RenewResult.Lost(lossOf(current, tenure)));
    }
    if (markedForDeletion(current)) {
      return revokedByDelete(current, tenure, deadline);
    }
    if (conflicts > CONFLICT_RETRIES) {
      // Still ours, but every write loses a race with someone else's edits: unknown, retry later.
      return CompletableFuture.failedFuture(
          new LeaseStoreUnavailableException("renewing Lease " + api.namespace() + "/" + objectName + " conflicted " + conflicts
                  + " times with other writes to the object",
              null));
    }
    return renewOn(current, tenure, sentAtNanos, deadline, conflicts);
  }

  /**
   * Our object was deleted while we held it: our finalizer kept it, marked. The holder stops
   * first — its lease is ended here, so {@code checkAlive()} is false from now on — and only then
   * is the finalizer removed (with the holder cleared), which lets the API server delete the object
   * and the next contender in without waiting our lease duration out.
   */
  private CompletableFuture<RenewResult> revokedByDelete(
      Lease current, Tenure tenure, Deadline deadline) {
    LeaseLost reason =
        new LeaseLost(
            LeaseLost.Kind.REVOKED,
            "Lease " + api.namespace() + "/" + objectName + " ('" + leaseName + "', token "
                + tenure.token() + ") was deleted while this holder held it");
    leases.find(tenure.holder()).ifPresent(lease -> lease.storeReportedLoss(tenure.token(), reason));
    Lease cleared =
        new LeaseBuilder(withoutFinalizer(current))
            .editSpec()
            .withHolderIdentity("")
            .withLeaseDurationSeconds(1)
            .endSpec()
            .build();
    return api.replace(cleared, deadline.left())
        .handle(
            (reply, error) -> {
              lastWritten = null;
              if (error != null || !(reply.succeeded() || reply.notFound())) {
                // Contenders wait our lease duration out instead.
                log.debug("Could not finish the delete of Lease {}/{}: {}", api.namespace(),
                    objectName, error != null ? error.toString() : "HTTP " + reply.code());
              }
              return new RenewResult.Lost(reason);
            });
  }

  private RenewResult deleted(Tenure tenure) {
    return new RenewResult.Lost(
        new LeaseLost(
            LeaseLost.Kind.REVOKED,
            "Lease " + api.namespace() + "/" + objectName + " ('" + leaseName + "', token "
                + tenure.token() + ") no longer exists: it was deleted"));
  }

  private LeaseLost lossOf(Lease current, Tenure tenure) {
    LeaseSpec spec = spec(current);
    String holder = holderOf(spec);
    String where = "Lease " + api.namespace() + "/" + objectName + " ('" + leaseName + "')";
    if (holder.isEmpty()) {
      return new LeaseLost(
          LeaseLost.Kind.REVOKED,
          where + " was released by someone else while token " + tenure.token() + " held it");
    }
    if (holder.equals(tenure.holder().toString())) {
      return new LeaseLost(
          LeaseLost.Kind.REVOKED,
          where + ": tenure " + tenure.token() + " was replaced by tenure " + tokenOf(current)
              + " of the same holder");
    }
    return new LeaseLost(
        LeaseLost.Kind.TAKEN_OVER,
        where + " is now held by " + holder + " (leaseTransitions " + transitions(spec) + ")");
  }

  // ---------------------------------------------------------------------------------------------
  // Release.

  @Override
  public CompletableFuture<Void> release(Tenure tenure) {
    Deadline deadline = deadline();
    Lease base = lastWritten;
    if (base == null || !holds(base, tenure)) {
      return api.get(objectName, deadline.left())
          .thenCompose(r -> releaseFrom(r, tenure, deadline, 0));
    }
    return releaseOn(base, tenure, deadline, 0);
  }

  private CompletableFuture<Void> releaseFrom(
      LeaseApi.Reply reply, Tenure tenure, Deadline deadline, int conflicts) {
    if (!reply.ok() || !holds(reply.lease(), tenure)) {
      return CompletableFuture.completedFuture(null); // not ours (any more): nothing to release
    }
    if (conflicts > CONFLICT_RETRIES) {
      return CompletableFuture.failedFuture(
          new LeaseStoreUnavailableException("releasing Lease " + api.namespace() + "/" + objectName + " conflicted " + conflicts
                  + " times with other writes to the object",
              null));
    }
    return releaseOn(reply.lease(), tenure, deadline, conflicts);
  }

  /**
   * As client-go releases: no holder, a one-second duration, the same leaseTransitions; and
   * without our finalizer, which only a held object needs (if the object was deleted meanwhile,
   * this lets the API server finish the delete).
   */
  private CompletableFuture<Void> releaseOn(
      Lease base, Tenure tenure, Deadline deadline, int conflicts) {
    ZonedDateTime now = now();
    Lease released =
        new LeaseBuilder(withoutFinalizer(base))
            .editSpec()
            .withHolderIdentity("")
            .withLeaseDurationSeconds(1)
            .withAcquireTime(now)
            .withRenewTime(now)
            .endSpec()
            .build();
    return api.replace(released, deadline.left())
        .thenCompose(
            reply -> {
              if (reply.succeeded() || reply.notFound()) {
                lastWritten = null;
                return CompletableFuture.<Void>completedFuture(null);
              }
              return api.get(objectName, deadline.left())
                  .thenCompose(r -> releaseFrom(r, tenure, deadline, conflicts + 1));
            });
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * One operation's deadline: the engine's operation timeout from its start. Every request of
   * the operation gets only the time left, and once none is left nothing more is sent, so an
   * attempt the engine has given up on does not go on writing.
   */
  private Deadline deadline() {
    return new Deadline(ticker.read() + timeoutNanos);
  }

  private final class Deadline {
    private final long atNanos;

    Deadline(long atNanos) {
      this.atNanos = atNanos;
    }

    /** {@return the time left; zero or less means none, and the API then sends nothing} */
    Duration left() {
      return Duration.ofNanos(atNanos - ticker.read());
    }
  }

  /** Whether {@code lease} records exactly {@code tenure}: its holder and its token. */
  private static boolean holds(Lease lease, Tenure tenure) {
    LeaseSpec spec = spec(lease);
    return holderOf(spec).equals(tenure.holder().toString()) && tokenOf(lease) == tenure.token();
  }

  /** Whether an operator deleted the object and finalizers still keep it. */
  private static boolean markedForDeletion(Lease lease) {
    return lease.getMetadata().getDeletionTimestamp() != null;
  }

  private static List<String> finalizers(Lease lease) {
    List<String> finalizers = lease.getMetadata().getFinalizers();
    return finalizers == null ? List.of() : finalizers;
  }

  private static Lease withoutFinalizer(Lease lease) {
    List<String> rest = new ArrayList<>(finalizers(lease));
    rest.remove(FINALIZER);
    return new LeaseBuilder(lease).editMetadata().withFinalizers(rest).endMetadata().build();
  }

  /** The fencing token recorded on the object, or -1 if none (not a Leasehold tenure). */
  private static long tokenOf(Lease lease) {
    return annotationAsLong(lease, TOKEN_ANNOTATION, -1);
  }

  private Lease renewed(Lease base) {
    return new LeaseBuilder(base)
        .editSpec()
        .withRenewTime(now())
        .withLeaseDurationSeconds(durationSeconds)
        .endSpec()
        .build();
  }

  private ZonedDateTime now() {
    // MicroTime: the API server keeps microseconds.
    return ZonedDateTime.now(wallClock).truncatedTo(ChronoUnit.MICROS);
  }

  private static LeaseSpec spec(Lease lease) {
    LeaseSpec spec = lease.getSpec();
    return spec != null ? spec : new LeaseSpec();
  }

  private static String holderOf(LeaseSpec spec) {
    String holder = spec.getHolderIdentity();
    return holder == null ? "" : holder;
  }

  private static int transitions(LeaseSpec spec) {
    Integer t = spec.getLeaseTransitions();
    return t == null ? 0 : t;
  }

  private static long requestIdOf(Lease lease) {
    return annotationAsLong(lease, REQUEST_ANNOTATION, Long.MIN_VALUE);
  }

  private static long annotationAsLong(Lease lease, String key, long absent) {
    ObjectMeta meta = lease.getMetadata();
    String value = meta.getAnnotations() == null ? null : meta.getAnnotations().get(key);
    if (value == null) {
      return absent;
    }
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      return absent;
    }
  }
}
