package io.leasehold.kubernetes;

import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import java.net.InetSocketAddress;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;

/**
 * fabric8's mock API server in CRUD mode (what {@code @EnableKubernetesMockClient(crud = true)}
 * starts), over plain HTTP on loopback: it stores objects, bumps {@code resourceVersion} on every
 * change and answers a write on a stale {@code resourceVersion} with 409, as an API server does.
 * No real API server can run on this machine; this is the one backend tested against a mock.
 */
final class MockApiServer implements AutoCloseable {

  static final String NAMESPACE = "test";

  /**
   * One JSON mapper for every client of the tests, warmed up once: building Jackson's
   * serializers for Lease takes longer than the suite's 200 ms operation timeout on a cold JVM.
   */
  private static final KubernetesSerialization SERIALIZATION = warmedUp(new KubernetesSerialization());


  private final KubernetesMockServer server;
  private final KubernetesClient admin;

  MockApiServer() {
    Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
    server =
        new KubernetesMockServer(
            new Context(), new MockWebServer(), responses, new KubernetesMixedDispatcher(responses), false);
    server.init();
    admin = client(address());
    // The server's first create and update are slow on a cold JVM (far over a 400 ms operation
    // timeout under load): pay for them here, not in the first lease operation of a test.
    Lease warm = admin.resource(warmUpLease()).create();
    admin.resource(new LeaseBuilder(warm).editSpec().withHolderIdentity("w").endSpec().build()).update();
  }

  /** {@return where the server listens} */
  InetSocketAddress address() {
    return new InetSocketAddress(server.getHostName(), server.getPort());
  }

  /**
   * From now on answers every {@code method} on {@code path} with {@code code} and a {@code
   * Status} as an API server writes it (a real one says "forbidden" for a missing RBAC rule):
   * what a service account without the Role sees. Stored objects are not touched.
   *
   * @param method GET, POST or PUT
   * @param path the request path, e.g. {@code /apis/coordination.k8s.io/v1/namespaces/NS/leases}
   * @param code the HTTP status, e.g. 403
   * @param message the Status message
   */
  void refuse(String method, String path, int code, String message) {
    Status status = new StatusBuilder()
        .withStatus("Failure")
        .withMessage(message)
        .withReason(code == 403 ? "Forbidden" : code == 401 ? "Unauthorized" : "Failure")
        .withNewDetails().withGroup("coordination.k8s.io").withKind("leases").endDetails()
        .withCode(code)
        .build();
    var expectation = server.expect();
    var withMethod = switch (method) {
      case "GET" -> expectation.get();
      case "POST" -> expectation.post();
      case "PUT" -> expectation.put();
      default -> throw new IllegalArgumentException("method must be GET, POST or PUT; was " + method);
    };
    withMethod.withPath(path).andReturn(code, status).always();
  }

  /** {@return a client straight to the server, for the test's own reads and writes} */
  KubernetesClient admin() {
    return admin;
  }

  /**
   * A client for {@code address} (the server, or a proxy in front of it) that reads no
   * kubeconfig and leaves retries to the lease engine.
   */
  static KubernetesClient client(InetSocketAddress address) {
    return client(address, 10_000);
  }

  /** As {@link #client(InetSocketAddress)}, with blocking calls giving up after {@code requestTimeoutMillis}. */
  static KubernetesClient client(InetSocketAddress address, int requestTimeoutMillis) {
    Config config =
        new ConfigBuilder(Config.empty())
            .withRequestTimeout(requestTimeoutMillis)
            .withMasterUrl("http://" + address.getHostString() + ":" + address.getPort() + "/")
            .withNamespace(NAMESPACE)
            .withRequestRetryBackoffLimit(0)
            .withHttp2Disable(true)
            .build();
    return new KubernetesClientBuilder()
        .withConfig(config)
        .withKubernetesSerialization(SERIALIZATION)
        .build();
  }

  private static KubernetesSerialization warmedUp(KubernetesSerialization json) {
    json.unmarshal(json.asJson(warmUpLease()), Lease.class);
    return json;
  }

  private static Lease warmUpLease() {
    ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
    return new LeaseBuilder()
            .withNewMetadata()
            .withName("warm-up")
            .withNamespace(NAMESPACE)
            .addToAnnotations("a", "b")
            .endMetadata()
            .withNewSpec()
            .withHolderIdentity("h")
            .withLeaseDurationSeconds(1)
            .withAcquireTime(now)
            .withRenewTime(now)
            .withLeaseTransitions(0)
            .endSpec()
            .build();
  }

  @Override
  public void close() {
    admin.close();
    try {
      server.destroy();
    } catch (IllegalStateException e) {
      // fabric8's server waits, bounded, for its connections to end; one held by a contender the
      // test cut off (a TcpProxy link that swallows the close) can outlast that wait. The test's
      // verdict is in by now and the server's port is not reused, so a slow close is not a failure.
      if (!(e.getCause() instanceof java.util.concurrent.TimeoutException)) {
        throw e;
      }
      System.err.println("MockApiServer: the mock server's close timed out (" + e.getMessage() + ")");
    }
  }
}
