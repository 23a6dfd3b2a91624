package io.leasehold.cli;

import io.grpc.Status;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.LeaseTimeoutException;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.AddNodeRequest;
import io.leasehold.core.proto.Member;
import io.leasehold.core.proto.MembersRequest;
import io.leasehold.core.proto.MembersResponse;
import io.leasehold.core.proto.RemoveNodeRequest;
import io.leasehold.server.Peer;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold admin members | add-node | remove-node | replace-node}: online membership
 * changes of a core cluster (docs/operations.md has the runbook).
 */
final class MembershipCommands {

  private MembershipCommands() {}

  static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

  /** What every membership command shares: the cluster, the timeout, and how a call ends. */
  abstract static class Base implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(
        names = "--backend",
        paramLabel = "URI",
        description = "The cluster, leasehold://host:port,host:port,... (default: $" + Backends.ENV
            + ", else what `leasehold dev` starts).")
    String backend;

    @Option(
        names = "--timeout",
        paramLabel = "DURATION",
        defaultValue = "60s",
        description = "How long to wait for each change to be committed, 100ms to 10m (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    String uri;
    private CoreClient client;

    /** The command's name in its messages. */
    abstract String name();

    abstract int run(PrintWriter out) throws InterruptedException;

    @Override
    public final Integer call() throws InterruptedException {
      uri = Backends.orDefault(backend);
      io.leasehold.client.CoreTarget target =
          Backends.coreTarget(spec.commandLine(), backend, uri, "admin works on the consistent core only");
      Durations.requireBetween(spec.commandLine(), "--timeout", timeout, StatusCommand.MIN_TIMEOUT, MAX_TIMEOUT);
      List<InetSocketAddress> endpoints = target.endpoints();
      // The node waits up to --timeout for the change; the client a little longer.
      try (CoreClient c = new CoreClient(endpoints, timeout.plusSeconds(5), target.tls())) {
        client = c;
        return run(spec.commandLine().getOut());
      } catch (Failed f) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("leasehold admin " + name() + ": " + f.getMessage());
        err.flush();
        return 1;
      }
    }

    /** When the call in progress gives up waiting for a node that answers (System.nanoTime()). */
    private long deadline;

    /**
     * Sends one membership call; a refusal ends the command (exit 1, or 2 for a bad argument).
     * While no node answers — the cluster is electing a leader, a node restarts after a change
     * was interrupted — it asks again until --timeout has passed: every call here is idempotent.
     */
    <T> T send(Function<CoreClient, CompletableFuture<T>> call, String nothingDone) throws InterruptedException {
      deadline = System.nanoTime() + timeout.toNanos(); // --timeout is per change (per call)
      while (true) {
        try {
          return call.apply(client).get();
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof LeaseStoreUnavailableException && System.nanoTime() - deadline < 0) {
            Thread.sleep(500);
            continue;
          }
          throw failure(cause, nothingDone);
        }
      }
    }

    private RuntimeException failure(Throwable cause, String nothingDone) {
      Status status = Status.fromThrowable(cause);
      if (cause instanceof LeaseStoreUnavailableException || cause instanceof LeaseTimeoutException) {
        return new Failed("no node of " + uri + " answered within --timeout " + Durations.format(timeout) + "; "
            + nothingDone + ". Is the cluster running? (" + cause.getMessage() + ")");
      }
      if (status.getCode() == Status.Code.INVALID_ARGUMENT) {
        return new ParameterException(spec.commandLine(), status.getDescription());
      }
      return new Failed(status.getDescription() != null ? status.getDescription() : String.valueOf(cause.getMessage()));
    }

    /**
     * How long the call now sent may take: what is left of --timeout, and 5 s more (the node waits
     * up to --timeout for a change, the client a little longer). Every call is bounded by it, so a
     * call that tries node after node (each up to the attempt timeout) cannot outlast the command.
     */
    Duration within() {
      return Duration.ofNanos(Math.max(0, deadline - System.nanoTime())).plusSeconds(5);
    }

    MembersResponse members() throws InterruptedException {
      return send(
          c -> c.<MembersResponse>call((stub, o) -> stub.members(MembersRequest.getDefaultInstance(), o), within()),
          "nothing was read");
    }

    MembersResponse add(Peer peer) throws InterruptedException {
      AddNodeRequest request =
          AddNodeRequest.newBuilder()
              .setId(peer.id())
              .setAddress(peer.clientEndpoint())
              .setTimeoutMs((int) timeout.toMillis())
              .build();
      return send(c -> c.<MembersResponse>call((stub, o) -> stub.addNode(request, o), within()), "nothing changed");
    }

    MembersResponse remove(String id, boolean force) throws InterruptedException {
      RemoveNodeRequest request =
          RemoveNodeRequest.newBuilder().setId(id).setForce(force).setTimeoutMs((int) timeout.toMillis()).build();
      return send(c -> c.<MembersResponse>call((stub, o) -> stub.removeNode(request, o), within()), "nothing changed");
    }

    Peer parsePeer(String label, String spec) {
      try {
        return Peer.parse(spec);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(this.spec.commandLine(), label + ": " + e.getMessage());
      }
    }

    static String describe(MembersResponse r) {
      StringBuilder b = new StringBuilder();
      for (Member m : r.getMembersList()) {
        b.append(b.length() == 0 ? "" : ", ").append(m.getId()).append('=').append(m.getAddress());
        if (m.getId().equals(r.getLeaderId())) {
          b.append(" (leader)");
        }
      }
      return b.toString();
    }

    static boolean isMember(MembersResponse r, String id) {
      return r.getMembersList().stream().anyMatch(m -> m.getId().equals(id));
    }
  }

  /** A refusal or failure, printed as one line; exit 1. */
  static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Failed(String message) {
      super(message, null, false, false);
    }
  }

  @Command(
      name = "members",
      mixinStandardHelpOptions = true,
      header = "Lists the voting members of a core cluster and its leader.",
      description = "Prints one line per member: ID=HOST:PORT (its client endpoint), the leader marked. Exits 0"
          + " when a member answered, 1 if none did, 2 for bad options.")
  static final class Members extends Base {
    @Override
    String name() {
      return "members";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      MembersResponse r = members();
      for (Member m : r.getMembersList()) {
        out.println(m.getId() + "=" + m.getAddress() + (m.getId().equals(r.getLeaderId()) ? " leader" : ""));
      }
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "add-node",
      mixinStandardHelpOptions = true,
      header = "Adds a node, started with `leasehold server --join`, to a running core cluster.",
      description = {
        "Checks that the node answers at HOST:PORT as ID with the cluster's election timeout, then"
            + " asks the leader to add it: the leader sends it the state first (it has no vote"
            + " meanwhile) and makes it a voting member once it has caught up. Does nothing when ID"
            + " is a member at that address already (so it can be run again).",
        "Exits 0 once the change is committed (or was in force), 1 if it was refused or failed (the"
            + " node does not answer, another change is in progress, it did not catch up in time)"
            + " or no node answered, 2 for bad options."
      })
  static final class AddNode extends Base {
    @Parameters(index = "0", paramLabel = "ID=HOST:PORT", description = "The new node: its --id and its client endpoint.")
    String node;

    @Override
    String name() {
      return "add-node";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      Peer peer = parsePeer("ID=HOST:PORT", node);
      MembersResponse r = add(peer);
      out.println((r.getChanged() ? "added " + peer.id() : peer.id() + " is a member already; nothing changed")
          + "; members: " + describe(r));
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "remove-node",
      mixinStandardHelpOptions = true,
      header = "Removes a node from a running core cluster.",
      description = {
        "Asks the leader to take member ID out of the cluster (a leader removed hands over). Refused"
            + " when it would leave fewer than 3 voting members, unless --force: with 2, one more"
            + " failure stops the cluster. Stop the removed node's process afterwards; never start"
            + " it again under this id in this cluster.",
        "Exits 0 once the change is committed, 1 if it was refused or failed or no node answered,"
            + " 2 for bad options or an id that is no member."
      })
  static final class RemoveNode extends Base {
    @Parameters(index = "0", paramLabel = "ID", description = "The member to remove.")
    String id;

    @Option(names = "--force", description = "Remove it even if fewer than 3 voting members remain.")
    boolean force;

    @Override
    String name() {
      return "remove-node";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      MembersResponse r = remove(id, force);
      out.println("removed " + id + "; members: " + describe(r));
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "replace-node",
      mixinStandardHelpOptions = true,
      header = "Replaces member OLD by a new node: removes OLD, then adds NEW.",
      description = {
        "For a node whose machine or disk is gone: start the new node with `leasehold server --join`,"
            + " then run this. It removes OLD (as remove-node --force), then adds NEW (as add-node)."
            + " Removing first means that no majority of any configuration on the way needs NEW's"
            + " vote: a leader that dies in the middle cannot leave the cluster waiting for a node"
            + " that never voted (Ratis RATIS-1912). Between the steps the cluster has one voter"
            + " fewer.",
        "Resumable: a step is skipped when it is in force already (OLD no member, NEW a member), so"
            + " after an interruption run the same command again.",
        "Exits 0 once both steps are committed, 1 if one was refused or failed (the output says which"
            + " steps are done), 2 for bad options."
      })
  static final class ReplaceNode extends Base {
    @Parameters(index = "0", paramLabel = "OLD", description = "The member to replace.")
    String old;

    @Parameters(index = "1", paramLabel = "NEW=HOST:PORT", description = "The new node: its --id and client endpoint.")
    String node;

    @Override
    String name() {
      return "replace-node";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      Peer peer = parsePeer("NEW=HOST:PORT", node);
      if (peer.id().equals(old)) {
        throw new ParameterException(spec.commandLine(), "NEW must have another id than OLD (" + old + "); a node"
            + " replaced keeps no id");
      }
      MembersResponse before = members();
      if (isMember(before, old)) {
        MembersResponse removed = remove(old, true);
        out.println("1/2 removed " + old + "; members: " + describe(removed));
      } else {
        out.println("1/2 done before: " + old + " is no member; members: " + describe(before));
      }
      out.flush();
      MembersResponse added = add(peer);
      out.println((added.getChanged() ? "2/2 added " : "2/2 done before: ") + peer.id() + "; members: " + describe(added));
      out.flush();
      return 0;
    }
  }
}
