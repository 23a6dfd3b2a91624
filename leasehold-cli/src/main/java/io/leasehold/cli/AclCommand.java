package io.leasehold.cli;

import io.leasehold.LeaseStoreUnavailableException;
import io.leasehold.client.AclCalls;
import io.leasehold.client.CoreClient;
import io.leasehold.client.CoreTarget;
import io.leasehold.core.proto.AclEntry;
import io.leasehold.core.proto.AclGrantResponse;
import io.leasehold.core.proto.AclListResponse;
import io.leasehold.core.proto.AclRevokeResponse;
import io.leasehold.core.proto.AclRight;
import io.leasehold.core.proto.AclRights;
import java.io.PrintWriter;
import java.time.Duration;
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

/** {@code leasehold acl grant|revoke|list}: the core's access control list. */
@Command(
    name = "acl",
    mixinStandardHelpOptions = true,
    header = "Shows and changes who may do what on a Leasehold core cluster.",
    description = {
      "Access control is on in a cluster bootstrapped with `leasehold server --bootstrap"
          + " --root-identity SUBJECT`; these commands need the right admin (the root has every"
          + " right). IDENTITY is a client certificate's subject, e.g. \"CN=billing,O=Acme\", or"
          + " anonymous (clients without a certificate). RIGHT is one of lease, read, write, watch,"
          + " admin; PREFIX the start of the lease names (lease) or keys (read, write, watch) it"
          + " covers, empty for all (admin takes none). See docs/security.md."
    },
    subcommands = {AclCommand.Grant.class, AclCommand.Revoke.class, AclCommand.ListEntries.class})
final class AclCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  /** What every acl command takes: the cluster and the patience. */
  abstract static class Base implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(
        names = "--backend",
        paramLabel = "URI",
        description = "The cluster, leaseholds://host:port,...?ca=FILE&cert=FILE&key=FILE (default: $"
            + Backends.ENV + ", else " + Backends.DEV_URI + ").")
    String backend;

    @Option(
        names = "--timeout",
        paramLabel = "DURATION",
        defaultValue = "2s",
        description = "How long each node has to answer, 100ms to 1m (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    /** The command's one line when the cluster refused it (exit 1, 77 without the right) or did not answer (1). */
    static final class Refused extends RuntimeException {
      private static final long serialVersionUID = 1L;

      private final int status;

      Refused(String line) {
        this(line, ExitStatus.FAILURE);
      }

      Refused(String line, int status) {
        super(line, null, false, false);
        this.status = status;
      }
    }

    abstract String name();

    /** Runs the command; {@link #send} throws {@link Refused} when the cluster says no. */
    abstract int run(PrintWriter out) throws InterruptedException;

    @Override
    public final Integer call() throws InterruptedException {
      try {
        return run(spec.commandLine().getOut());
      } catch (Refused r) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("leasehold acl " + name() + ": " + r.getMessage());
        err.flush();
        return r.status;
      }
    }

    /** {@return the call's answer}; a refusal or no answer is thrown as {@link Refused} */
    <T> T send(Function<CoreClient, CompletableFuture<T>> call) throws InterruptedException {
      String uri = Backends.orDefault(backend);
      CoreTarget target = Backends.coreTarget(spec.commandLine(), backend, uri, "acl works on the consistent core only");
      Durations.requireBetween(spec.commandLine(), "--timeout", timeout, StatusCommand.MIN_TIMEOUT, StatusCommand.MAX_TIMEOUT);
      try (CoreClient client = new CoreClient(target.endpoints(), timeout, target.tls())) {
        return call.apply(client).get();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof LeaseStoreUnavailableException) {
          throw new Refused("no node of " + uri + " answered (" + Errors.describe(cause) + "); nothing was changed. "
              + Backends.unreachableHint(uri));
        }
        throw new Refused(Errors.describe(cause), Errors.denied(cause) != null ? ExitStatus.DENIED : ExitStatus.FAILURE);
      }
    }
  }

  /** An entry from the command line: identity, right, prefix. */
  abstract static class EntryCommand extends Base {

    @Parameters(index = "0", paramLabel = "IDENTITY", description = "A certificate subject (RFC 2253), or anonymous.")
    String identity;

    @Parameters(index = "1", paramLabel = "RIGHT", description = "lease, read, write, watch or admin.")
    String right;

    @Parameters(index = "2", paramLabel = "PREFIX", arity = "0..1", defaultValue = "",
        description = "Lease names or keys that start with it (default: all).")
    String prefix;

    AclEntry entry() {
      AclRight parsed;
      try {
        parsed = AclRights.parse(right);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "RIGHT " + e.getMessage());
      }
      String normal;
      try {
        // Written as the nodes write a certificate's subject, so the entry matches it.
        normal = io.leasehold.server.edge.ClientIdentity.parse(identity).toString();
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "IDENTITY " + e.getMessage().substring("identity ".length()));
      }
      if (parsed == AclRight.ACL_RIGHT_ADMIN && !prefix.isEmpty()) {
        throw new ParameterException(spec.commandLine(), "PREFIX must be empty for admin (it is not per prefix); was \"" + prefix + "\"");
      }
      return AclCalls.entry(normal, parsed, prefix);
    }

    static String describe(AclEntry e) {
      return e.getIdentity() + " " + AclRights.word(e.getRight()) + " " + (e.getPrefix().isEmpty() ? "(all)" : "\"" + e.getPrefix() + "\"");
    }
  }

  @Command(
      name = "grant",
      mixinStandardHelpOptions = true,
      header = "Gives IDENTITY the RIGHT on PREFIX.",
      description = "Exits 0 once the cluster holds the entry (also when it did already), 1 if it refused or no node"
          + " answered, 2 for bad options.")
  static final class Grant extends EntryCommand {
    @Override
    String name() {
      return "grant";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      AclEntry entry = entry();
      AclGrantResponse answer = send(c -> AclCalls.grant(c, entry));
      out.println((answer.getAdded() ? "granted: " : "already granted: ") + describe(entry));
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "revoke",
      mixinStandardHelpOptions = true,
      header = "Takes the RIGHT on PREFIX from IDENTITY (exactly that entry).",
      description = "Exits 0 once the entry is gone, 1 if the cluster did not hold it, refused (the root cannot be"
          + " revoked) or no node answered, 2 for bad options. Each node applies it as it applies the log.")
  static final class Revoke extends EntryCommand {
    @Override
    String name() {
      return "revoke";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      AclEntry entry = entry();
      AclRevokeResponse answer = send(c -> AclCalls.revoke(c, entry));
      if (!answer.getRemoved()) {
        throw new Refused("the ACL holds no entry " + describe(entry) + "; see `leasehold acl list`");
      }
      out.println("revoked: " + describe(entry));
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      header = "Prints the root identity and every entry: IDENTITY RIGHT PREFIX, one a line.",
      description = "Exits 0, 1 if refused or no node answered, 2 for bad options.")
  static final class ListEntries extends Base {
    @Override
    String name() {
      return "list";
    }

    @Override
    int run(PrintWriter out) throws InterruptedException {
      AclListResponse list = send(AclCalls::list);
      if (!list.getEnabled()) {
        out.println("access control is off (the cluster was bootstrapped without --root-identity): every client may do everything");
      } else {
        out.println("root: " + list.getRootIdentity() + " (every right)");
        for (AclEntry e : list.getEntriesList()) {
          out.println(EntryCommand.describe(e));
        }
      }
      out.flush();
      return 0;
    }
  }
}
