package io.leasehold.cli;

import io.grpc.Status;
import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.SaveSnapshotRequest;
import io.leasehold.core.proto.SnapshotChunk;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.TransferLeaderRequest;
import io.leasehold.core.proto.TransferLeaderResponse;
import io.grpc.stub.StreamObserver;
import io.leasehold.server.Backup;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
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
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold admin ...}: operating a running core cluster. */
@Command(
    name = "admin",
    mixinStandardHelpOptions = true,
    header = "Operates a running Leasehold core cluster.",
    description = "Commands for operators of the consistent core; see docs/operations.md.",
    subcommands = {
      AdminCommand.TransferLeader.class,
      AdminCommand.Snapshot.class,
      MembershipCommands.Members.class,
      MembershipCommands.AddNode.class,
      MembershipCommands.RemoveNode.class,
      MembershipCommands.ReplaceNode.class
    })
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

    /** TLS to the nodes, from a {@code leaseholds://} URI; null in plaintext. */
    private io.leasehold.client.ClientTls tls;

    @Override
    public Integer call() throws InterruptedException {
      String uri = Backends.orDefault(backend);
      io.leasehold.client.CoreTarget target =
          Backends.coreTarget(spec.commandLine(), backend, uri, "admin works on the consistent core only");
      List<InetSocketAddress> endpoints = target.endpoints();
      tls = target.tls();
      Durations.requireBetween(spec.commandLine(), "--timeout", timeout, StatusCommand.MIN_TIMEOUT, StatusCommand.MAX_TIMEOUT);
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
      try (CoreClient client = new CoreClient(via, timeout.plusSeconds(2), tls)) {
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
          CoreClient client = new CoreClient(List.of(endpoint), StatusCommand.MIN_TIMEOUT.multipliedBy(10), tls);
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


    private ParameterException bad(String message) {
      return new ParameterException(spec.commandLine(), message);
    }
  }

  /** {@code leasehold admin snapshot ...}: backups. */
  @Command(
      name = "snapshot",
      mixinStandardHelpOptions = true,
      header = "Backs up a core cluster's whole state.",
      description = "Restore a backup with `leasehold server --bootstrap --restore FILE` on every node of a new"
          + " cluster; see docs/core.md.",
      subcommands = {Save.class})
  static final class Snapshot implements Callable<Integer> {
    @Spec private CommandSpec spec;

    /** Without a subcommand: bad usage in one line naming them, as {@code leasehold} alone is. */
    @Override
    public Integer call() {
      PrintWriter err = spec.commandLine().getErr();
      err.println("leasehold admin snapshot: a subcommand is needed: "
          + String.join(", ", spec.commandLine().getSubcommands().keySet()));
      err.println("Try 'leasehold admin snapshot --help' for more information.");
      err.flush();
      return ExitStatus.USAGE;
    }
  }

  /** {@code leasehold admin snapshot save FILE}. */
  @Command(
      name = "save",
      mixinStandardHelpOptions = true,
      header = "Saves a point-in-time copy of a core cluster's whole state to FILE.",
      description = {
        "Reads the whole state through the leader (a linearizable read: every write acknowledged"
            + " before the command started is in it) and writes it to FILE with its revision and a"
            + " SHA-256, atomically: FILE is whole or absent, never half-written.",
        "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
            + Backends.DEV_URI,
        "An existing FILE is kept, and the command exits 2, unless --force.",
        "Exits 0 once FILE is written, 1 if no node answered or the copy failed, 2 for bad options."
      })
  static final class Save implements Callable<Integer> {

    static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

    @Spec private CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE", description = "Where the backup goes; an existing file only with --force.")
    private Path file;

    @Option(names = "--force", description = "Replace FILE if it exists (default: refuse, and keep it).")
    private boolean force;

    @Option(
        names = "--backend",
        paramLabel = "URI",
        description = "The cluster, leasehold://host:port,host:port,... (default: see above).")
    private String backend;

    @Option(
        names = "--timeout",
        paramLabel = "DURATION",
        defaultValue = "30s",
        description = "How long each node has to send the copy, 100ms to 10m (default: ${DEFAULT-VALUE}).")
    private Duration timeout;

    /** TLS to the nodes, from a {@code leaseholds://} URI; null in plaintext. */
    private io.leasehold.client.ClientTls tls;

    /** The chunks of one attempt, put together. */
    private record Copy(long revision, byte[] data, byte[] sha256, long totalBytes) {}

    @Override
    public Integer call() throws InterruptedException {
      String uri = Backends.orDefault(backend);
      io.leasehold.client.CoreTarget target =
          Backends.coreTarget(spec.commandLine(), backend, uri, "admin works on the consistent core only");
      List<InetSocketAddress> endpoints = target.endpoints();
      tls = target.tls();
      Durations.requireBetween(spec.commandLine(), "--timeout", timeout, StatusCommand.MIN_TIMEOUT, MAX_TIMEOUT);
      Path dir = file.toAbsolutePath().getParent();
      if (Files.isDirectory(file) || dir == null || !Files.isDirectory(dir) || !Files.isWritable(dir)) {
        throw bad("FILE must be a file in a writable directory; was " + file);
      }
      if (Files.exists(file) && !force) {
        // An earlier backup may be the only one: not replaced by accident.
        throw bad("FILE " + file + " exists; --force replaces it");
      }
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      Copy copy;
      try (CoreClient client = new CoreClient(endpoints, timeout, tls)) {
        copy = client.<Copy>call((stub, o) -> stub.saveSnapshot(SaveSnapshotRequest.getDefaultInstance(), collect(o))).get();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        err.println("leasehold admin snapshot save: "
            + (cause instanceof LeaseStoreUnavailableException
                ? "no node of " + uri + " answered; nothing was saved. Is the cluster running? (" + cause.getMessage() + ")"
                : "the copy failed; nothing was saved: " + cause.getMessage()));
        err.flush();
        return 1;
      }
      try {
        if (copy.data().length != copy.totalBytes()
            || !MessageDigest.isEqual(copy.sha256(), MessageDigest.getInstance("SHA-256").digest(copy.data()))) {
          err.println("leasehold admin snapshot save: the copy arrived damaged (size or SHA-256 differs); nothing"
              + " was saved; try again");
          err.flush();
          return 1;
        }
        Backup backup = new Backup(copy.revision(), System.currentTimeMillis(), copy.data());
        backup.writeTo(file);
        // The file's own size (the state, with the backup's header): what ls shows.
        out.println("saved revision " + copy.revision() + " (" + Files.size(file) + " bytes, sha256 "
            + backup.sha256() + ") to " + file);
        out.flush();
        return 0;
      } catch (IOException | java.security.NoSuchAlgorithmException e) {
        err.println("leasehold admin snapshot save: could not write " + file + ": " + e.getMessage());
        err.flush();
        return 1;
      }
    }

    /** An observer of the stream that hands the whole copy on as one value when it completes. */
    private static StreamObserver<SnapshotChunk> collect(StreamObserver<Copy> whole) {
      return new StreamObserver<>() {
        private final ByteArrayOutputStream data = new ByteArrayOutputStream();
        private SnapshotChunk first;

        @Override
        public void onNext(SnapshotChunk chunk) {
          if (first == null) {
            first = chunk;
          }
          data.writeBytes(chunk.getData().toByteArray());
        }

        @Override
        public void onError(Throwable t) {
          whole.onError(t);
        }

        @Override
        public void onCompleted() {
          if (first == null) {
            whole.onError(io.grpc.Status.INTERNAL.withDescription("the node sent no copy").asException());
            return;
          }
          whole.onNext(new Copy(first.getRevision(), data.toByteArray(), first.getSha256().toByteArray(), first.getTotalBytes()));
          whole.onCompleted();
        }
      };
    }

    private ParameterException bad(String message) {
      return new ParameterException(spec.commandLine(), message);
    }
  }
}
