package io.leasehold.kubernetes;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseObserver;
import io.leasehold.LeaseSettings;
import io.leasehold.LeaseState;
import io.leasehold.Subscription;
import io.leasehold.spi.OpenObservations;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.spi.OpenLeases;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadPoolExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code kubernetes:} backend: each lease is a {@code coordination.k8s.io/v1} Lease object in
 * one namespace, written as client-go writes it, so {@code kubectl get leases} shows who holds
 * what and a client-go or fabric8 leader elector on the same object excludes a Leasehold holder
 * (and the other way round). See {@code docs/kubernetes.md}.
 *
 * <p>Kubernetes has no sessions, so each held lease renews its own object every heartbeat; all the
 * leases of one backend share one HTTP client, one timer thread and one callback thread.
 *
 * <ul>
 *   <li><b>TTL</b>: Kubernetes keeps {@code leaseDurationSeconds} in whole seconds, so the TTL is
 *       rounded up to whole seconds in the object, and a TTL under one second is rejected.</li>
 *   <li><b>Expiry</b> is measured by each contender on its own monotonic clock: a record held by
 *       another holder is taken over only after this process has seen it unchanged for its {@code
 *       leaseDurationSeconds}. Clocks of different machines are never compared.</li>
 *   <li><b>Fencing token</b>: the {@code resourceVersion} that the tenure's granting write
 *       replaced (annotation {@code leasehold.io/fencing-token}). Resource versions only grow,
 *       also across a delete and re-creation of the object, so tokens strictly increase whatever
 *       is deleted; {@code leaseTransitions} is still counted as client-go counts it, but it
 *       starts again at 0 on a new object and is not the token.</li>
 *   <li><b>Deletes</b>: a held object carries the finalizer {@code leasehold.io/tenure}, so a
 *       {@code kubectl delete} only marks it; the holder's next renewal stops it and then
 *       removes the finalizer, and a contender finding it marked waits its lease duration out
 *       first, as for an expired holder.</li>
 *   <li><b>Names</b>: lease names Kubernetes would reject are mapped by {@link
 *       KubernetesLeaseNames#objectName(String)}.</li>
 * </ul>
 */
public final class KubernetesBackend implements LeaseBackend {

  private static final Logger log = LoggerFactory.getLogger(KubernetesBackend.class);

  private final KubernetesClient client;
  private final String namespace;
  private final LeaseRuntime runtime;
  private final AutoCloseable ownedRuntime;
  private final Clock wallClock;
  private final LeaseApi api;
  private final OpenLeases leases;
  private final OpenObservations observations = new OpenObservations();
  private volatile boolean closed;
  /** Where this backend's observations open their watches (a blocking call); shut down by close(). */
  private final ThreadPoolExecutor watchOpenerThreads = KubernetesObservation.newWatchOpener();
  /** Where an observation's blocking watch call runs; tests hold it back to widen a race. */
  volatile Executor watchOpener = watchOpenerThreads;
  /** How long a watch opening may take before another is started; tests shorten it. */
  volatile Duration watchOpeningPatience = KubernetesObservation.OPENING_PATIENCE;

  KubernetesBackend(
      KubernetesClient client,
      String namespace,
      LeaseRuntime runtime,
      AutoCloseable ownedRuntime,
      Clock wallClock) {
    this.client = Objects.requireNonNull(client, "client");
    this.namespace = KubernetesLeaseNames.checkNamespace(Objects.requireNonNull(namespace, "namespace"));
    this.runtime = Objects.requireNonNull(runtime, "runtime");
    this.ownedRuntime = ownedRuntime;
    this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
    this.api = new LeaseApi(client, namespace, runtime.timers());
    this.leases = new OpenLeases(uri());
  }

  /**
   * A backend on a client the caller configured (its API server, credentials, TLS); the backend
   * takes the client over and closes it when it is closed. Give the client {@code
   * requestRetryBackoffLimit(0)}: the leases retry on their own schedule, and an HTTP-level retry
   * would only outlive the operation timeout.
   *
   * @param client the Kubernetes client; closed with the backend
   * @param namespace the namespace the Lease objects live in, a DNS-1123 label
   * @return the backend
   * @throws IllegalArgumentException if the namespace is not a valid namespace name
   */
  public static KubernetesBackend using(KubernetesClient client, String namespace) {
    LeaseRuntime runtime = LeaseRuntime.system("kubernetes");
    try {
      return new KubernetesBackend(client, namespace, runtime, runtime, Clock.systemUTC());
    } catch (RuntimeException e) {
      runtime.close();
      throw e;
    }
  }

  /**
   * Connects as fabric8 configures itself: inside a pod with its service account (token, CA and
   * namespace under {@code /var/run/secrets/kubernetes.io/serviceaccount}), elsewhere from {@code
   * ~/.kube/config} (or {@code $KUBECONFIG}) and its current context.
   *
   * @param namespace the namespace, or {@code null} for the pod's or the context's namespace
   *     ({@code default} if neither names one)
   * @return the backend
   */
  static KubernetesBackend connect(String namespace) {
    Config config = Config.autoConfigure(null);
    config.setRequestRetryBackoffLimit(0); // the engine retries; see using()
    String ns = namespace != null ? namespace : config.getNamespace() != null ? config.getNamespace() : "default";
    KubernetesClientBuilder builder = new KubernetesClientBuilder().withConfig(config);
    KubernetesClient client = builder.build();
    try {
      KubernetesBackend backend = using(client, ns);
      log.info("Leasehold kubernetes backend: API server {}, namespace {}", config.getMasterUrl(), ns);
      return backend;
    } catch (RuntimeException e) {
      client.close();
      throw e;
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>On Kubernetes the TTL must be at least one second; it is rounded up to whole seconds in
   * the object's {@code leaseDurationSeconds} (the holder's own deadline keeps the exact TTL, so
   * rounding up only makes others wait longer).
   *
   * @throws IllegalArgumentException if the TTL is under one second
   */
  @Override
  public Lease newLease(LeaseSettings settings) {
    Objects.requireNonNull(settings, "settings");
    if (settings.ttl().compareTo(Duration.ofSeconds(1)) < 0) {
      throw new IllegalArgumentException(
          "ttl must be at least 1 s on the kubernetes backend, whose Lease objects keep"
              + " leaseDurationSeconds in whole seconds; was " + settings.ttl().toMillis() + " ms");
    }
    String objectName = KubernetesLeaseNames.objectName(settings.name());
    KubernetesLeaseStore store =
        new KubernetesLeaseStore(api, objectName, settings, runtime.ticker(), wallClock, leases);
    return leases.newLease(settings, store, runtime);
  }

  /** {@return the namespace the Lease objects live in} */
  public String namespace() {
    return namespace;
  }

  @Override
  public String uri() {
    return "kubernetes:?namespace=" + namespace;
  }

  /**
   * {@inheritDoc}
   *
   * <p>On Kubernetes: a read of the Lease object, then a watch of it from that {@code
   * resourceVersion} (fabric8 resumes it after a dropped connection; {@code 410 Gone} gives {@code
   * GAP} and a fresh read). There is no server-side expiry: a held object whose version stays the
   * same for its {@code leaseDurationSeconds} on the observer's own clock is reported {@code
   * EXPIRED}, as a contender would take it over. Attached keys are not supported here; see {@code
   * docs/kubernetes.md}.
   */
  @Override
  public Subscription observe(String name, LeaseObserver observer) {
    if (closed) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to observe");
    }
    return observations.open(
        name, observer, runtime.callbacks(), observation ->
            new KubernetesObservation(client, api, runtime.timers(), watchOpener, watchOpeningPatience, observation));
  }

  /**
   * {@inheritDoc}
   *
   * <p>On Kubernetes: one read of the Lease object. Attached keys are not supported, so the state
   * never has any.
   */
  @Override
  public CompletableFuture<LeaseState> read(String name) {
    if (closed) {
      throw new IllegalStateException("backend " + uri() + " is closed; open a new one to read");
    }
    LeaseSettings.builder(Objects.requireNonNull(name, "name"), "reader"); // checks the name
    return api.get(KubernetesLeaseNames.objectName(name), Duration.ofSeconds(10)).thenApply(reply -> {
      if (!reply.ok() && !reply.notFound()) {
        throw new java.util.concurrent.CompletionException(new io.leasehold.LeaseStoreUnavailableException(
            "reading Lease " + namespace + "/" + KubernetesLeaseNames.objectName(name) + " gave HTTP " + reply.code(), null));
      }
      return new LeaseState(name,
          reply.lease() == null ? java.util.Optional.empty() : KubernetesObservation.holding(reply.lease()), Map.of());
    });
  }

  /**
   * {@inheritDoc}
   *
   * <p>Also closes the Kubernetes client.
   */
  @Override
  public void close() {
    closed = true;
    observations.closeAll();
    // Interrupts openings still waiting for the API server; their observations are closed.
    watchOpenerThreads.shutdownNow();
    try {
      leases.closeAll();
    } finally {
      try {
        if (ownedRuntime != null) {
          ownedRuntime.close();
        }
      } catch (Exception e) {
        log.warn("Could not stop the threads of {}", uri(), e);
      } finally {
        client.close();
      }
    }
  }

  @Override
  public String toString() {
    return "KubernetesBackend{" + client.getMasterUrl() + ", namespace " + namespace + '}';
  }
}
