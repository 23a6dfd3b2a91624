package io.leasehold.cli;

import io.grpc.Status;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.client.CoreBackendProvider;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.TransferLeaderRequest;
import io.leasehold.core.proto.TransferLeaderResponse;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold admin ...}: operating a running core cluster. */
@Command(
    name = "admin",
    mixinStandardHelpOptions = true,
    header = "Operates a running Leasehold core cluster.",
    description = "Commands for operators of the consistent core; see docs/operations.md.",
    subcommands = {AdminCommand.TransferLeader.class})
final class AdminCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  /** {@code leasehold admin transfer-leader [--to ID]}: a planned move of the Raft leadership. */
  @Command(
      name = "transfer-leader",
      mixinStandardHelpOptions = true,
      header = "Moves the leadership of a core cluster to another node, without an election timeout.",
      description = {
        "Asks the cluster to make node --to its leader (without --to: the follower the leader heard"
            + " from last) and waits until it leads. Use it before stopping the leader for"
            + " maintenance (a node stopped with SIGTERM hands over by itself). Leases held"
            + " meanwhile stay held; writes pause for about one round trip while the leadership"
            + " moves.",
        "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
            + Backends.DEV_URI,
        "Exits 0 once the node leads (also when it led already), 1 if the move failed or no node"
            + " answered, 2 for bad options."
      })
  static final class TransferLeader implements Callable<Integer> {

    @Spec private CommandSpec spec;

    @Option(
        names = "--to",
        paramLabel = "ID",
        description = "The id of the node that should lead, as in the nodes' --peers (default: the"
            + " leader picks a follower).")
    private String to;

    @Option(
        names = "--backend",
        paramLabel = "URI",
        description = "The cluster, leasehold://host:port,host:port,... (default: see above).")
    private String backend;

    @Option(
        names = "--timeout",
        paramLabel = "DURATION",
        defaultValue = "5s",
        description = "How long to wait for the new leader, 100ms to 1m (default: ${DEFAULT-VALUE}).")
    private Duration timeout;

    @Override
    public Integer call() throws InterruptedException {
      String uri = Backends.orDefault(backend);
      List<InetSocketAddress> endpoints = endpoints(uri);
      if (timeout.compareTo(StatusCommand.MIN_TIMEOUT) < 0 || timeout.compareTo(StatusCommand.MAX_TIMEOUT) > 0) {
        throw bad("--timeout must be between " + Durations.format(StatusCommand.MIN_TIMEOUT) + " and "
            + Durations.format(StatusCommand.MAX_TIMEOUT) + "; was " + Durations.format(timeout));
      }
      if (to != null && to.isBlank()) {
        throw bad("--to must be a node id, as in the nodes' --peers; was empty");
      }
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      List<InetSocketAddress> via = endpoints;
      if (to == null) {
        // The leader picks the follower: ask each node which one leads, and send it there.
        Optional<InetSocketAddress> leader = leaderAmong(endpoints);
        if (leader.isEmpty()) {
          err.println("leasehold admin transfer-leader: no node of " + uri + " says it leads (an election under"
              + " way, or the cluster is down); try again, or name the new leader with --to");
          err.flush();
          return 1;
        }
        via = List.of(leader.get());
      }
      TransferLeaderRequest request =
          TransferLeaderRequest.newBuilder()
              .setTo(to == null ? "" : to)
              .setTimeoutMs((int) timeout.toMillis())
              .build();
      // The node waits up to --timeout for the new leader; the client a little longer.
      try (CoreClient client = new CoreClient(via, timeout.plusSeconds(2))) {
        TransferLeaderResponse moved =
            client.<TransferLeaderResponse>call((stub, o) -> stub.transferLeader(request, o)).get();
        if (moved.getPreviousLeader().equals(moved.getLeader())) {
          out.println("node " + moved.getLeader() + " leads already; nothing moved");
        } else {
          out.println("leadership moved from " + moved.getPreviousLeader() + " to " + moved.getLeader());
        }
        out.flush();
        return 0;
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        Status status = Status.fromThrowable(cause);
        if (status.getCode() == Status.Code.INVALID_ARGUMENT) {
          // The node names its field ("to must be one of ..."): the flag is --to.
          throw bad("--" + status.getDescription());
        }
        if (cause instanceof LeaseStoreUnavailableException) {
          err.println("leasehold admin transfer-leader: no node of " + uri + " answered; nothing moved. Is the"
              + " cluster running? (" + cause.getMessage() + ")");
        } else {
          err.println("leasehold admin transfer-leader: the leadership did not move: "
              + (status.getDescription() != null ? status.getDescription() : cause.getMessage()));
        }
        err.flush();
        return 1;
      }
    }

    /** The endpoint of the node that says it leads, asking every node at once. */
    private Optional<InetSocketAddress> leaderAmong(List<InetSocketAddress> endpoints) {
      List<CoreClient> clients = new ArrayList<>();
      try {
        List<CompletableFuture<Boolean>> leads = new ArrayList<>();
        StatusRequest self = StatusRequest.newBuilder().setNodeOnly(true).build();
        for (InetSocketAddress endpoint : endpoints) {
          CoreClient client = new CoreClient(List.of(endpoint), StatusCommand.MIN_TIMEOUT.multipliedBy(10));
          clients.add(client);
          leads.add(
              client
                  .<StatusResponse>call((stub, o) -> stub.status(self, o))
                  .handle((r, e) -> e == null && r.getNodesCount() > 0 && r.getNodes(0).getRole().equals("LEADER")));
        }
        for (int i = 0; i < endpoints.size(); i++) {
          if (leads.get(i).join()) {
            return Optional.of(endpoints.get(i));
          }
        }
        return Optional.empty();
      } finally {
        clients.forEach(CoreClient::close);
      }
    }

    private List<InetSocketAddress> endpoints(String uri) {
      String source = backend != null ? "--backend" : "$" + Backends.ENV;
      try {
        return CoreBackendProvider.endpoints(uri);
      } catch (IllegalArgumentException e) {
        throw bad(source + " must be a core URI, leasehold://host:port,host:port,... (admin works on the"
            + " consistent core only): " + e.getMessage());
      }
    }

    private ParameterException bad(String message) {
      return new ParameterException(spec.commandLine(), message);
    }
  }
}
