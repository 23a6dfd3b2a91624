package io.leasehold.cli;

import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.KeyValue;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code leasehold revoke NAME}: an operator takes a lease away from its holder, safely. */
@Command(
    name = "revoke",
    mixinStandardHelpOptions = true,
    header = "Takes a lease away from its holder; nobody else gets it before that holder stopped.",
    description = {
      "Revokes the current tenure of lease NAME on a Leasehold cluster and prints who held it and"
          + " with which fencing token. The holder learns of it from its watch or its next"
          + " keep-alive and stops (its onLost runs); until it has released that tenure, or its"
          + " session has expired (its whole safe window has passed), the core gives NAME to"
          + " nobody else. The holder itself may acquire NAME again, as a new tenure with a new"
          + " token.",
      "Without --backend: $" + Backends.ENV + ", else what `leasehold dev` starts by default:%n  "
          + Backends.DEV_URI,
      "On etcd, `etcdctl del <namespace>/leases/NAME` is the same (see docs/etcd.md).",
      "Exits 0 if a holder's tenure was revoked, 1 if nobody held NAME or no node answered, 2 for"
          + " bad options."
    })
final class RevokeCommand implements Callable<Integer> {

  static final int MAX_NAME_CHARS = 256;

  @Spec private CommandSpec spec;

  @Parameters(index = "0", paramLabel = "NAME", description = "The lease name.")
  private String name;

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

  @Override
  public Integer call() throws InterruptedException {
    String uri = Backends.orDefault(backend);
    io.leasehold.client.CoreTarget target =
        Backends.coreTarget(
            spec.commandLine(), backend, uri, "revoke works on the consistent core; on etcd use `etcdctl del <namespace>/leases/NAME`");
    List<InetSocketAddress> endpoints = target.endpoints();
    if (name.isEmpty() || name.length() > MAX_NAME_CHARS) {
      throw bad("NAME must be 1 to " + MAX_NAME_CHARS + " characters; was " + name.length());
    }
    Durations.requireBetween(spec.commandLine(), "--timeout", timeout, StatusCommand.MIN_TIMEOUT, StatusCommand.MAX_TIMEOUT);
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    DeleteResponse response;
    // Every node in turn, each within --timeout: the client gives up after two rounds.
    try (CoreClient client = new CoreClient(endpoints, timeout, target.tls())) {
      DeleteRequest delete =
          DeleteRequest.newBuilder().setCall(client.newCall()).setKey(CoreClient.LEASE_PREFIX + name).build();
      response = client.<DeleteResponse>call((stub, o) -> stub.delete(delete, o)).get();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof LeaseStoreUnavailableException) {
        err.println("leasehold revoke: no node of " + uri + " answered (" + Errors.describe(cause)
            + "); nothing was revoked. " + Backends.unreachableHint(uri));
      } else {
        err.println("leasehold revoke: " + Errors.describe(cause));
      }
      err.flush();
      return 1;
    }
    if (!response.getDeleted()) {
      err.println("leasehold revoke: nobody holds lease '" + name + "' on " + uri
          + " (or it was revoked already and its holder has not stopped yet)");
      err.flush();
      return 1;
    }
    KeyValue was = response.getPrevKv();
    out.println("revoked lease '" + name + "': it was held by " + was.getValue().toStringUtf8() + " with token "
        + was.getCreateRevision());
    out.println("Nobody else can acquire it until that holder has stopped: it learns of the revocation at"
        + " its next keep-alive at the latest, or its session expires.");
    out.flush();
    return 0;
  }


  private ParameterException bad(String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
