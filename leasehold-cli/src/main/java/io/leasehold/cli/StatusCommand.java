package io.leasehold.cli;

import io.grpc.Status;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code leasehold status}: each node of a core cluster, as it sees itself, and the counts. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    header = "Shows each node of a Leasehold cluster and what it holds.",
    description = {
      "Asks every node of the backend's URI for its own state (id, role, term, applied log index),"
          + " marks the nodes that do not answer UNREACHABLE, and prints the number of sessions,"
          + " keys and held leases of the cluster (a linearizable read through the leader).",
      "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
          + Backends.DEV_URI,
      "Exits 0 if at least one node answered, 1 if none did, 2 for bad options."
    })
final class StatusCommand implements Callable<Integer> {

  static final Duration MIN_TIMEOUT = Duration.ofMillis(100);
  static final Duration MAX_TIMEOUT = Duration.ofMinutes(1);

  @Spec private CommandSpec spec;

  @Option(
      names = "--backend",
      paramLabel = "URI",
      description = "The cluster, leasehold://host:port,host:port,... (default: see above).")
  private String backend;

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      defaultValue = "2s",
      description = "How long each node has to answer, 100ms to 1m (default: ${DEFAULT-VALUE}).")
  private Duration timeout;

  /**
   * One node's answer, or why there was none; {@code denied}: the node answered for itself only,
   * since this identity may not read the cluster's counts (the server's reason).
   */
  private record Answer(InetSocketAddress endpoint, StatusResponse response, String failure, String denied) {}

  /** TLS to the nodes, from a {@code leaseholds://} URI; null in plaintext. */
  private io.leasehold.client.ClientTls tls;

  @Override
  public Integer call() {
    String uri = Backends.orDefault(backend);
    io.leasehold.client.CoreTarget target =
        Backends.coreTarget(spec.commandLine(), backend, uri, "status works on the consistent core only");
    List<InetSocketAddress> endpoints = target.endpoints();
    tls = target.tls();
    Durations.requireBetween(spec.commandLine(), "--timeout", timeout, MIN_TIMEOUT, MAX_TIMEOUT);
    List<Answer> answers = ask(endpoints);
    PrintWriter out = spec.commandLine().getOut();
    out.println("cluster " + uri);
    out.printf("%-10s %-22s %-12s %8s %10s%n", "node", "address", "role", "term", "applied");
    for (Answer a : answers) {
      String address = a.endpoint.getHostString() + ":" + a.endpoint.getPort();
      if (a.response == null) {
        out.printf("%-10s %-22s %-12s %8s %10s   %s%n", "?", address, "UNREACHABLE", "-", "-", a.failure);
      } else {
        NodeStatus n = a.response.getNodes(0);
        out.printf(
            "%-10s %-22s %-12s %8d %10d%n", n.getId(), address, n.getRole(), n.getTerm(), n.getAppliedIndex());
      }
    }
    List<Answer> answered = answers.stream().filter(a -> a.response != null).toList();
    if (answered.isEmpty()) {
      out.flush();
      PrintWriter err = spec.commandLine().getErr();
      boolean tlsProblem = answers.stream().anyMatch(a -> a.failure.startsWith("(TLS: "));
      err.println("leasehold status: no node of " + uri + " answered"
          + (tlsProblem ? " (the reason is above)." : ". " + Backends.unreachableHint(uri)));
      err.flush();
      return 1;
    }
    Optional<String> denied = answered.stream().map(Answer::denied).filter(d -> d != null).findFirst();
    if (denied.isPresent()) {
      out.println("counts not shown: " + denied.get());
      out.flush();
      return 0;
    }
    Optional<StatusResponse> leader =
        answered.stream().map(Answer::response).filter(r -> !r.getLeaderId().isEmpty()).findFirst();
    if (leader.isPresent()) {
      StatusResponse r = leader.get();
      out.printf(
          "leader %s; sessions %d, keys %d, held leases %d (revision %d)%n",
          r.getLeaderId(), r.getSessions(), r.getKeys(), r.getHeldLeases(), r.getRevision());
    } else {
      // No node asked is the leader. A follower's counts are a read through the leader, so counts
      // that were read prove there is one (status through one follower's URI); otherwise none is
      // known to the nodes that answered.
      Optional<StatusResponse> read =
          answered.stream().map(Answer::response).filter(StatusResponse::getCountsKnown)
              .max(Comparator.comparingLong(StatusResponse::getRevision));
      if (read.isPresent()) {
        StatusResponse r = read.get();
        out.printf(
            "leader: not among the nodes asked (they read the counts through it); sessions %d, keys"
                + " %d, held leases %d (revision %d)%n",
            r.getSessions(), r.getKeys(), r.getHeldLeases(), r.getRevision());
      } else {
        out.println("no leader among the nodes that answered, and none they could read the counts"
            + " through: an election is under way, or fewer than a majority of the nodes run");
      }
    }
    out.flush();
    return 0;
  }

  /** Each node separately and all at once: each answers for itself, so none may stand in for another. */
  private List<Answer> ask(List<InetSocketAddress> endpoints) {
    List<CoreClient> clients = new ArrayList<>();
    try {
      List<CompletableFuture<Answer>> calls = new ArrayList<>();
      for (InetSocketAddress endpoint : endpoints) {
        CoreClient client = new CoreClient(List.of(endpoint), timeout, tls);
        clients.add(client);
        calls.add(
            client
                .<StatusResponse>call((stub, o) -> stub.status(StatusRequest.getDefaultInstance(), o))
                .handle((r, e) -> answer(client, endpoint, r, e))
                .thenCompose(f -> f));
      }
      return calls.stream().map(CompletableFuture::join).toList();
    } finally {
      clients.forEach(CoreClient::close);
    }
  }

  /**
   * The node's answer; when this identity may not read the cluster's counts (they need the right
   * {@code admin}), the node is asked again for its own state alone, which needs no right.
   */
  private CompletableFuture<Answer> answer(CoreClient client, InetSocketAddress endpoint, StatusResponse r, Throwable e) {
    if (e == null) {
      return CompletableFuture.completedFuture(
          r.getNodesCount() > 0 ? new Answer(endpoint, r, null, null) : new Answer(endpoint, null, "(empty answer)", null));
    }
    String refusal = Errors.denied(e);
    if (refusal == null) {
      return CompletableFuture.completedFuture(new Answer(endpoint, null, why(e), null));
    }
    return client
        .<StatusResponse>call((stub, o) -> stub.status(StatusRequest.newBuilder().setNodeOnly(true).build(), o))
        .handle(
            (own, again) ->
                again == null && own.getNodesCount() > 0
                    ? new Answer(endpoint, own, null, refusal)
                    : new Answer(endpoint, null, "(permission denied: " + refusal + ")", null));
  }

  /**
   * Why a node did not answer, in a few words: never the transport's own text ("recvAddress(..)
   * failed with error(-104)") or an exception's class name, as docs/cli.md promises.
   */
  private static String why(Throwable e) {
    Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    Status s = Status.fromThrowable(t);
    if (s.getCode() == Status.Code.DEADLINE_EXCEEDED) {
      return "(no answer in time)";
    }
    String tls = Errors.tlsProblem(t);
    if (tls != null) {
      return "(TLS: " + tls + ")";
    }
    String network = Errors.networkReason(t);
    if (network != null) {
      return "(" + network + ")";
    }
    if (s.getCode() == Status.Code.UNAVAILABLE) {
      return "(no answer: the connection failed)";
    }
    return "(" + Errors.describe(t) + ")";
  }


}
