package io.leasehold.kubernetes;

import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.leasehold.LeaseProtocolException;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import java.net.HttpURLConnection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The three calls the backend makes on Lease objects — get, create, replace — sent without
 * blocking through the fabric8 client's HTTP client, so they carry its authentication (service
 * account token, kubeconfig credentials) and TLS settings.
 *
 * <p>The fabric8 DSL only offers blocking calls; a partitioned API server would tie up one thread
 * per pending call. Replies are handed to {@code replies} (the backend's timer thread), so the
 * lease logic never runs on the HTTP client's threads.
 */
final class LeaseApi {

  private static final Logger log = LoggerFactory.getLogger(LeaseApi.class);
  private static final String JSON = "application/json";
  /** The resource as a Role names it. */
  private static final String RESOURCE = "leases.coordination.k8s.io";
  /** The verbs this class uses (a finalizer removed is an update). */
  private static final String VERBS = "get, create and update";
  /** Where the ServiceAccount, Role and RoleBinding to apply are. */
  private static final String ROLE = "deploy/kubernetes/app-rbac/leasehold-leases.yaml";

  private final HttpClient http;
  private final KubernetesSerialization json;
  private final String collection;
  private final String namespace;
  private final Executor replies;
  private final String master;

  LeaseApi(KubernetesClient client, String namespace, Executor replies) {
    this.http = client.getHttpClient();
    this.json = client.getKubernetesSerialization();
    this.namespace = namespace;
    this.master = client.getMasterUrl().toString();
    this.collection =
        (master.endsWith("/") ? master : master + "/")
            + "apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases";
    this.replies = replies;
  }

  String namespace() {
    return namespace;
  }

  /**
   * An answer of the API server that the lease logic acts on: the object (on 200 and 201), or
   * 404 Not Found, or 409 Conflict. Every other status fails the future.
   *
   * @param code the HTTP status
   * @param lease the object the server returned, or {@code null} on 404 and 409, and on a 200
   *     without a body (fabric8's mock server answers so the update that removes the last
   *     finalizer of an object being deleted)
   */
  record Reply(int code, Lease lease) {
    boolean ok() {
      return lease != null;
    }

    /** Whether the server applied the request (2xx), with or without an object in the reply. */
    boolean succeeded() {
      return code == HttpURLConnection.HTTP_OK || code == HttpURLConnection.HTTP_CREATED;
    }

    boolean notFound() {
      return code == HttpURLConnection.HTTP_NOT_FOUND;
    }

    boolean conflict() {
      return code == HttpURLConnection.HTTP_CONFLICT;
    }
  }

  CompletableFuture<Reply> get(String name, Duration timeout) {
    return send(timeout, request(collection + '/' + name, timeout), "get", name);
  }

  CompletableFuture<Reply> create(Lease lease, Duration timeout) {
    return send(
        timeout, request(collection, timeout).post(JSON, json.asJson(lease)), "create", name(lease));
  }

  /** A PUT: applied only if the object's {@code resourceVersion} still is the one in {@code lease}. */
  CompletableFuture<Reply> replace(Lease lease, Duration timeout) {
    String name = name(lease);
    return send(
        timeout,
        request(collection + '/' + name, timeout).put(JSON, json.asJson(lease)),
        "update",
        name);
  }

  private HttpRequest.Builder request(String uri, Duration timeout) {
    return http.newHttpRequestBuilder()
        .uri(uri)
        .header("Accept", JSON)
        .timeout(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Sends a request; {@code verb} is the Kubernetes verb it needs (get, create, update). */
  private CompletableFuture<Reply> send(
      Duration timeout, HttpRequest.Builder request, String verb, String name) {
    if (timeout.toMillis() <= 0) {
      return CompletableFuture.failedFuture(
          new LeaseTimeoutException(
              "no time left to " + verb + " Lease " + namespace + "/" + name
                  + " within the operation timeout; not sent",
              null));
    }
    CompletableFuture<Reply> reply = new CompletableFuture<>();
    CompletableFuture<HttpResponse<String>> sent;
    try {
      sent = http.sendAsync(request.build(), String.class);
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    sent.whenComplete(
        (response, error) ->
            replies.execute(
                () -> {
                  try {
                    reply.complete(interpret(response, error, verb, name));
                  } catch (RuntimeException e) {
                    reply.completeExceptionally(e);
                  }
                }));
    return reply;
  }

  private Reply interpret(HttpResponse<String> response, Throwable error, String verb, String name) {
    if (error != null) {
      SSLException tls = tlsFailure(error);
      if (tls != null) {
        throw new LeaseStoreUnavailableException(
            "could not " + verb + " Lease " + namespace + "/" + name + ": the TLS handshake with the"
                + " API server " + master + " failed (" + tls.getMessage() + ") — check that the"
                + " cluster's certificate-authority is the CA that signed the API server's"
                + " certificate, and the client-certificate and client-key the kubeconfig (or the"
                + " client's Config) gives",
            error);
      }
      throw new LeaseStoreUnavailableException(
          "could not " + verb + " Lease " + namespace + "/" + name + ": " + error, error);
    }
    int code = response.code();
    switch (code) {
      case HttpURLConnection.HTTP_OK, HttpURLConnection.HTTP_CREATED -> {
        String body = response.body();
        Lease lease = body == null || body.isBlank() ? null : parse(body, verb, name);
        return new Reply(code, lease);
      }
      case HttpURLConnection.HTTP_NOT_FOUND, HttpURLConnection.HTTP_CONFLICT -> {
        return new Reply(code, null);
      }
      case HttpURLConnection.HTTP_FORBIDDEN -> {
        // Authenticated, but RBAC lacks this verb: name the verb, the resource and the namespace
        // exactly as a Role spells them, and where the Role that grants them is.
        String message =
            "Kubernetes refused to " + verb + " " + RESOURCE + " \"" + name + "\" in namespace "
                + namespace + ": 403 Forbidden" + said(response) + " — the service account needs "
                + VERBS + " on " + RESOURCE + " in namespace " + namespace + ": apply the Role in "
                + ROLE + " (docs/kubernetes.md, Permissions)";
        log.error("{}", message);
        throw new LeaseStoreUnavailableException(message, null);
      }
      case HttpURLConnection.HTTP_UNAUTHORIZED -> {
        // Not an RBAC matter: the token or client certificate was not accepted at all.
        String message =
            "Kubernetes did not accept the client's credentials (401 Unauthorized) to " + verb + " "
                + RESOURCE + " \"" + name + "\" in namespace " + namespace + said(response)
                + " — check the service account token, or the kubeconfig's user (client"
                + " certificate and key, or token) and that they are not expired";
        log.error("{}", message);
        throw new LeaseStoreUnavailableException(message, null);
      }
      default -> throw new LeaseStoreUnavailableException(
          "could not " + verb + " Lease " + namespace + "/" + name + ": HTTP " + code + " "
              + response.body(),
          null);
    }
  }

  /** The server's own explanation (a {@code Status} message), if it gave one; cut short. */
  private String said(HttpResponse<String> response) {
    String body = response.body();
    if (body == null || body.isBlank()) {
      return "";
    }
    String message;
    try {
      Status status = json.unmarshal(body, Status.class);
      message = status == null ? null : status.getMessage();
    } catch (RuntimeException notAStatus) {
      message = body;
    }
    if (message == null || message.isBlank()) {
      return "";
    }
    message = message.strip();
    return " (the API server said: "
        + (message.length() > 300 ? message.substring(0, 300) + "…" : message) + ")";
  }

  /** The TLS failure behind {@code error}, if that is what it was. */
  private static SSLException tlsFailure(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SSLException ssl) {
        return ssl;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private Lease parse(String body, String what, String name) {
    try {
      Lease lease = json.unmarshal(body, Lease.class);
      if (lease == null || lease.getMetadata() == null) {
        throw new IllegalArgumentException("no object in the reply");
      }
      return lease;
    } catch (RuntimeException e) {
      throw new LeaseProtocolException("the API server answered the " + what + " of Lease " + namespace + "/" + name
              + " with something that is not a Lease: " + e.getMessage(),
          e);
    }
  }

  private static String name(Lease lease) {
    return lease.getMetadata().getName();
  }
}
