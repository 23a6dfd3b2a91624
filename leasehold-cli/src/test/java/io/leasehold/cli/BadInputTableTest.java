package io.leasehold.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every command with bad input, in this JVM: for each row, the exit status from the
 * documented set, one message naming the flag or the URI's part, no stack trace, and done within
 * the class's bound. To add a case, add a row: the exit status, a fragment of the message, the
 * arguments; {@code FREE} stands for a loopback port nothing listens on (nor on the next),
 * {@code TAKEN} for a port whose next port (a node's Raft port) something listens on.
 */
@Timeout(value = 40, unit = TimeUnit.SECONDS)
@Tag("integration")
class BadInputTableTest {

  /** docs/cli.md's exit statuses, but 0. */
  static final Set<Integer> DOCUMENTED = Set.of(1, 2, 69, 70, 75, 77, 127, 130);

  private static int free;
  private static int taken;
  private static ServerSocket holder;
  private static ServerSocket resetting;

  /** {@code OWNER_ONLY_KEY}: a file of mode 0600 that is not a key (a node refuses a key others may read first). */
  private static Path ownerOnlyKey;

  @BeforeAll
  static void ports() throws IOException {
    ownerOnlyKey = java.nio.file.Files.writeString(Path.of("target/bad-input-owner-only-key.pem"), "not a key\n");
    java.nio.file.Files.setPosixFilePermissions(
        ownerOnlyKey, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    free = RunningCli.freePortPair();
    taken = RunningCli.freePortPair();
    holder = new ServerSocket();
    holder.bind(new InetSocketAddress(taken + 1)); // every address, as Ratis binds
    resetting = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    Thread resetter = new Thread(BadInputTableTest::resetEveryConnection, "resetter");
    resetter.setDaemon(true);
    resetter.start();
  }

  /** {@code RESET}: a port that takes each connection and resets it at once (a peer that crashed). */
  private static void resetEveryConnection() {
    while (!resetting.isClosed()) {
      try (java.net.Socket s = resetting.accept()) {
        s.setSoLinger(true, 0);
      } catch (IOException closed) {
        // closed at the end of the class, or one connection failed: go on with the next
      }
    }
  }

  @AfterAll
  static void release() throws IOException {
    holder.close();
    resetting.close();
  }

  static Stream<Arguments> table() {
    String core = "leasehold://127.0.0.1:FREE";
    return Stream.of(
        // the command line itself
        row(2, "'dmeo' is not a command; the commands are dev, server", "dmeo"),
        row(2, "Unknown option: '--nope'", "--nope"),
        row(2, "leasehold: a command is needed: one of dev, server", new String[0]),
        // run: flags (bugs 3, 4; items 13, 17)
        row(2, "--ttl must be between 5s and 24h on leasehold:// (the core); was 1ms",
            "run", "--backend", core, "--lease", "x", "--ttl", "1ms", "--", "true"),
        row(2, "--ttl must be between 5s and 24h on leasehold:// (the core); was 500ms",
            "run", "--backend", core, "--lease", "x", "--ttl", "500ms", "--", "true"),
        row(2, "--ttl must be between 5s and 24h on etcd:; was 2s",
            "run", "--backend", "etcd://127.0.0.1:FREE", "--lease", "x", "--ttl", "2s", "--", "true"),
        row(2, "--ttl must be between 1ms and 24h on memory:; was 0ms",
            "run", "--backend", "memory:", "--lease", "x", "--ttl", "0ms", "--", "true"),
        row(2, "--ttl must be between 1ms and 24h on memory:; was 25h",
            "run", "--backend", "memory:", "--lease", "x", "--ttl", "25h", "--", "true"),
        row(2, "Invalid value for option '--ttl': '5' is not a duration",
            "run", "--lease", "x", "--ttl", "5", "--", "true"),
        row(2, "Invalid value for option '--ttl': 'PT15S' is not a duration",
            "run", "--lease", "x", "--ttl", "PT15S", "--", "true"),
        row(2, "--timeout needs --wait",
            "run", "--backend", "memory:", "--lease", "x", "--timeout", "1s", "--", "true"),
        row(2, "--timeout must be between 1ms and 24h; was 0ms",
            "run", "--backend", "memory:", "--lease", "x", "--wait", "--timeout", "0s", "--", "true"),
        row(2, "--grace must be between 0ms and 24h; was 25h",
            "run", "--backend", "memory:", "--lease", "x", "--grace", "25h", "--", "true"),
        row(2, "--lease: name must not be blank",
            "run", "--backend", "memory:", "--lease", "", "--", "true"),
        row(2, "--owner: owner must not start or end with white space",
            "run", "--backend", "memory:", "--lease", "x", "--owner", " o", "--", "true"),
        row(2, "put -- before the command", "run", "--lease", "x", "ls", "-l"),
        row(2, "Missing required option: '--lease=NAME'", "run", "--", "true"),
        row(2, "Missing required parameter: 'COMMAND'", "run", "--lease", "x"),
        // run: URIs of every scheme
        row(2, "--backend is not a usable backend URI ('nosuch://x')",
            "run", "--backend", "nosuch://x", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('leasehold://h:99999')",
            "run", "--backend", "leasehold://h:99999", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('leasehold://')",
            "run", "--backend", "leasehold://", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('etcd://')",
            "run", "--backend", "etcd://", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('zookeeper://')",
            "run", "--backend", "zookeeper://", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('zookeeper://127.0.0.1:FREE?sessionTimeout=soon')",
            "run", "--backend", "zookeeper://127.0.0.1:FREE?sessionTimeout=soon", "--lease", "x", "--", "true"),
        row(2, "--backend is not a usable backend URI ('memory:x')",
            "run", "--backend", "memory:x", "--lease", "x", "--", "true"),
        // run: a command that cannot start (item 21), unreachable stores (bug 5, item 12)
        row(127, "cannot run 'no-such-command-18': command not found on the PATH",
            "run", "--backend", "memory:", "--lease", "x", "--", "no-such-command-18"),
        row(127, "cannot run './pom.xml': not an executable file",
            "run", "--backend", "memory:", "--lease", "x", "--", "./pom.xml"),
        row(69, "answered (connection refused)",
            "run", "--backend", core, "--lease", "x", "--", "true"),
        row(69, "the store did not answer",
            "run", "--backend", core, "--lease", "x", "--wait", "--timeout", "2s", "--", "true"),
        row(69, "Is etcd running at that address?",
            "run", "--backend", "etcd://127.0.0.1:FREE", "--lease", "x", "--", "true"),
        row(69, "Is ZooKeeper running at that address?",
            "run", "--backend", "zookeeper://127.0.0.1:FREE?sessionTimeout=5s", "--ttl", "5s",
            "--lease", "x", "--", "true"),
        // get, watch, members: a store that does not answer says so, with what to check
        row(1, "leasehold get: no node of [127.0.0.1:FREE] answered (connection refused). Is the cluster running, and are these its nodes' client ports?",
            "get", "x", "--backend", core),
        row(1, "leasehold watch: no answer from etcd://127.0.0.1:FREE within 1s. Is etcd running at that address?",
            "watch", "x", "--backend", "etcd://127.0.0.1:FREE", "--timeout", "1s"),
        row(1, "Is ZooKeeper running at that address?",
            "members", "g", "--backend", "zookeeper://127.0.0.1:FREE?sessionTimeout=5s", "--timeout", "1s"),
        row(2, "--timeout must be between 100ms and 1m; was 0ms", "watch", "x", "--timeout", "0s"),
        // dev (bugs 2, 6)
        row(2, "--nodes must be between 1 and 9; was 0", "dev", "--nodes", "0"),
        row(2, "--port must be 0 (free ports) or between 1 and 65530", "dev", "--port", "70000"),
        row(2, "--duration must be between 1s and 24h; was 0ms", "dev", "--duration", "0s"),
        row(2, "--dir must be a directory; pom.xml is a file", "dev", "--dir", "pom.xml"),
        row(2, "--dir pom.xml/sub cannot be created: ", "dev", "--dir", "pom.xml/sub"),
        row(2, "--dir /proc/leasehold-18 cannot be created: /proc/leasehold-18: ",
            "dev", "--dir", "/proc/leasehold-18"),
        row(2, "--dir must be new, empty, or a directory an earlier `leasehold dev --dir` made; /proc holds"
            + " other files", "dev", "--dir", "/proc"),
        row(1, "port TAKEN1 (node n1's Raft port) is in use: is another `leasehold dev` running?",
            "dev", "--nodes", "1", "--port", "TAKEN"),
        // server (bug 7, item 16)
        row(2, "--peers is not valid: nodes n1 (127.0.0.1:7100) and n2 (127.0.0.1:7100) share a port",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:7100,n2=127.0.0.1:7100",
            "--data-dir", "target/never-created"),
        row(2, "--peers is not valid: nodes n1 (127.0.0.1:7100) and n2 (127.0.0.1:7101) share a port",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:7100,n2=127.0.0.1:7101",
            "--data-dir", "target/never-created"),
        row(2, "--election-timeout must be between 50ms and 1m; was 10ms",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:7100", "--data-dir", "target/never-created",
            "--election-timeout", "10ms"),
        row(1, "node n1 cannot start: its Raft port TAKEN1 (PORT + 1) is in use",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:TAKEN", "--data-dir", "target/never-created",
            "--bootstrap"),
        row(1, "leasehold server: node n1 could not start: /proc/leasehold-18: no such file or directory",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "/proc/leasehold-18",
            "--bootstrap"),
        // status, revoke (item 12)
        row(2, "--backend must be a core URI", "status", "--backend", "memory:"),
        row(2, "--timeout must be between 100ms and 1m; was 5ms", "status", "--timeout", "5ms"),
        row(1, "no node of leasehold://127.0.0.1:FREE answered. Is the cluster running",
            "status", "--backend", core, "--timeout", "500ms"),
        row(2, "NAME must be 1 to 256 characters; was 0", "revoke", ""),
        row(2, "Missing required parameter: 'NAME'", "revoke"),
        row(2, "--backend must be a core URI", "revoke", "x", "--backend", "etcd://127.0.0.1:2379"),
        row(1, "no node of leasehold://127.0.0.1:FREE answered",
            "revoke", "x", "--backend", core, "--timeout", "500ms"),
        // admin
        row(2, "--backend must be a core URI", "admin", "transfer-leader", "--backend", "memory:"),
        row(2, "--timeout must be between 100ms and 1m; was 5m", "admin", "transfer-leader", "--timeout", "5m"),
        row(2, "--to must be a node id", "admin", "transfer-leader", "--to", " "),
        row(1, "no node of leasehold://127.0.0.1:FREE says it leads",
            "admin", "transfer-leader", "--backend", core),
        row(1, "no node of leasehold://127.0.0.1:FREE answered; nothing moved",
            "admin", "transfer-leader", "--to", "n1", "--backend", core, "--timeout", "500ms"),
        // membership: the node named alone, as it is (once, "zz" was said to break a --peers rule,
        // and of "a=h:1,b=h:2" only the first node was added, with no word about the second)
        row(2, "ID=HOST:PORT: a node must look like id=host:port; \"zz\" does not",
            "admin", "add-node", "zz", "--backend", core),
        row(2, "ID=HOST:PORT: \"n4=127.0.0.1:7006,n5=127.0.0.1:7008\" names more than one node; give one",
            "admin", "add-node", "n4=127.0.0.1:7006,n5=127.0.0.1:7008", "--backend", core),
        row(2, "NEW=HOST:PORT: port in \"n4=127.0.0.1:x\" is not a number",
            "admin", "replace-node", "n1", "n4=127.0.0.1:x", "--backend", core),
        row(2, "Missing required parameter: 'FILE'", "admin", "snapshot", "save"),
        row(2, "FILE must be a file in a writable directory", "admin", "snapshot", "save", "/proc/no/such/x"),
        row(2, "--timeout must be between 100ms and 10m; was 11m",
            "admin", "snapshot", "save", "target/x.backup", "--timeout", "11m"),
        row(1, "no node of leasehold://127.0.0.1:FREE answered; nothing was saved",
            "admin", "snapshot", "save", "target/x.backup", "--backend", core, "--timeout", "500ms"),
        // server --restore
        row(2, "--restore seeds a new node: it needs --bootstrap",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-18",
            "--restore", "pom.xml"),
        row(2, "is not a Leasehold backup",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-18",
            "--bootstrap", "--restore", "pom.xml"),
        row(2, "--restore: no-such.backup does not exist",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-18",
            "--bootstrap", "--restore", "no-such.backup"),
        row(2, "--bump-revision must be 0 to 1000000000000000; was -1",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-18",
            "--bootstrap", "--restore", "pom.xml", "--bump-revision", "-1"),
        // TLS: the server's flags, the leaseholds:// URI's parameters
        row(2, "--tls-cert, --tls-key and --tls-ca go together (all three for TLS, none for plaintext); missing: --tls-key, --tls-ca",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--tls-cert", "pom.xml"),
        row(2, "--tls-key must be a readable file; target/no-such-key.pem does not exist",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--tls-cert", "pom.xml", "--tls-key", "target/no-such-key.pem", "--tls-ca", "pom.xml"),
        row(2, "--client-auth needs TLS",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--client-auth", "optional"),
        row(2, "--client-auth must be require or optional; was 'sometimes'",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--tls-cert", "pom.xml", "--tls-key", "pom.xml", "--tls-ca", "pom.xml", "--client-auth", "sometimes"),
        row(2, "leasehold server: node n1 refuses to start: its TLS certificate (--tls-cert) pom.xml is not a PEM certificate file",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-13",
            "--bootstrap", "--tls-cert", "pom.xml", "--tls-key", "OWNER_ONLY_KEY", "--tls-ca", "pom.xml"),
        row(2, "leasehold server: node n1 refuses to start: its TLS private key (--tls-key) file pom.xml: mode 0",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/nowhere-13",
            "--bootstrap", "--tls-cert", "pom.xml", "--tls-key", "pom.xml", "--tls-ca", "pom.xml"),
        row(2, "--backend must be a core URI, leasehold://host:port,host:port,... or leaseholds://",
            "status", "--backend", "leaseholds://127.0.0.1:FREE"),
        row(2, "ca=target/no-such-ca.pem: the file does not exist",
            "status", "--backend", "leaseholds://127.0.0.1:FREE?ca=target/no-such-ca.pem"),
        row(2, "unknown parameter 'tls'",
            "admin", "transfer-leader", "--backend", "leaseholds://127.0.0.1:FREE?ca=pom.xml&tls=on"),
        row(2, "--backend is not a usable backend URI ('leaseholds://127.0.0.1:FREE?ca=pom.xml&key=pom.xml')",
            "run", "--backend", "leaseholds://127.0.0.1:FREE?ca=pom.xml&key=pom.xml", "--lease", "x", "--", "true"),
        // access control
        row(2, "RIGHT must be one of lease, read, write, watch, admin; was \"own\"", "acl", "grant", "CN=x", "own", "p/"),
        row(2, "PREFIX must be empty for admin (it is not per prefix); was \"p/\"", "acl", "grant", "CN=x", "admin", "p/"),
        row(2, "Missing required parameter: 'RIGHT'", "acl", "revoke", "CN=x"),
        row(2, "IDENTITY must be a certificate subject such as \"CN=billing,O=Acme\" (RFC 2253) or \"anonymous\"; was \"billing\"",
            "acl", "grant", "billing", "read", "p/"),
        row(1, "leasehold acl list: no node of leasehold://127.0.0.1:FREE answered",
            "acl", "list", "--backend", core, "--timeout", "500ms"),
        row(2, "--root-identity needs --bootstrap",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--root-identity", "CN=admin"),
        row(2, "--root-identity needs TLS (--tls-cert, --tls-key, --tls-ca)",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--bootstrap", "--root-identity", "CN=admin"),
        row(2, "--max-sessions-per-identity must be 1 to 10000000; was 0",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-sessions-per-identity", "0"),
        // limits: each flag's range
        row(2, "--max-keys-per-session must be 1 to 10000000; was 0",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-keys-per-session", "0"),
        row(2, "--max-key-bytes must be 16 to 4096; was 4097",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-key-bytes", "4097"),
        row(2, "--max-value-bytes must be 16384 to 1048576; was 100",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-value-bytes", "100"),
        row(2, "--max-watchers-per-connection must be 1 to 1000000; was 0",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-watchers-per-connection", "0"),
        row(2, "--max-watch-backlog must be 1 to 100000; was 100001",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-watch-backlog", "100001"),
        row(2, "--watch-history-bytes must be 2097152 to 17179869184; was 1024",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--watch-history-bytes", "1024"),
        row(2, "--max-data-bytes must be 1048576 to 1099511627776; was 1048575",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-data-bytes", "1048575"),
        row(2, "--max-data-bytes must be 1048576 to 1099511627776; was 1099511627777",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-data-bytes", "1099511627777"),
        row(2, "--max-in-flight-per-connection must be 8 to 1000000; was 7",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-in-flight-per-connection", "7"),
        row(2, "--max-connection-age must be 1s to 720h; was 500ms",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-connection-age", "500ms"),
        row(2, "--max-connection-age must be 1s to 720h; was 721h",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-connection-age", "721h"),
        row(2, "--handshake-timeout must be 1s to 2m; was 10m",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--handshake-timeout", "10m"),
        row(2, "--max-connections must be 1 to 1000000; was 0",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-connections", "0"),
        row(2, "--max-connections-per-address must be 1 to 1000000; was 1000001",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-connections-per-address", "1000001"),
        row(2, "Invalid value for option '--max-watch-backlog': 'lots' is not an int",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-watch-backlog", "lots"),
        row(2, "Invalid value for option '--max-data-bytes': '64MiB' is not a long",
            "server", "--id", "n1", "--peers", "n1=127.0.0.1:FREE", "--data-dir", "target/never-created",
            "--max-data-bytes", "64MiB"),
        // the operator's first hour: a mistyped scheme gets the nearest real one, not a made-up module
        row(2, "no Leasehold backend for scheme 'leasehol' is on the class path or module path (available: etcd,"
            + " etcds, kubernetes, leasehold, leaseholds, memory, zookeeper); did you mean 'leasehold:'?",
            "run", "--backend", "leasehol://127.0.0.1:FREE", "--lease", "x", "--", "true"),
        row(2, "for scheme 'nosuch' is on the class path or module path (available: etcd, etcds, kubernetes,"
            + " leasehold, leaseholds, memory, zookeeper); no Leasehold module serves it",
            "get", "x", "--backend", "nosuch://x"),
        // memory: coordinates nothing across processes: run and members --join say so
        row(1, "memory: is a store inside this one process: a `leasehold run` in another process does not see"
            + " this lease", "run", "--backend", "memory:", "--lease", "x", "--", "false"),
        // a node that resets the connection: the reason in a few words, not the transport's text
        // ("connection reset", or "the connection failed" when gRPC sees the channel closed before
        // the reset's error: which one depends on timing; the raw text is refused for every row)
        row(1, "?          127.0.0.1:RESET        UNREACHABLE         -          -   (",
            "status", "--backend", "leasehold://127.0.0.1:RESET", "--timeout", "1s"),
        // admin snapshot: a bare group says which subcommand; an existing FILE is kept without --force
        row(2, "leasehold admin snapshot: a subcommand is needed: save", "admin", "snapshot"),
        row(2, "FILE pom.xml exists; --force replaces it",
            "admin", "snapshot", "save", "pom.xml", "--backend", core, "--timeout", "500ms"),
        // demo
        row(2, "--contenders must be between 2 and 9; was 1", "demo", "--contenders", "1"),
        row(2, "--ttl must be between 200ms and 1m; was 10ms", "demo", "--ttl", "10ms"));
  }

  private static Arguments row(int status, String message, String... args) {
    return Arguments.of(status, message, List.of(args));
  }

  @ParameterizedTest(name = "{2} -> {0}")
  @MethodSource("table")
  void aBadInputIsOneMessageWithADocumentedStatus(int status, String message, List<String> args) {
    String[] argv = args.stream().map(BadInputTableTest::ports).toArray(String[]::new);

    Cli run = Cli.run(argv);

    String said = run.err();
    assertThat(run.exitCode()).as("exit status; stderr:%n%s", said).isEqualTo(status).isIn(DOCUMENTED);
    assertThat(said + run.out()).contains(ports(message));
    assertThat(said + run.out())
        .as("no stack trace")
        .doesNotContain("\tat ", "Caused by", "Exception:", "Terminating with exit status", "failed with error(");
    List<String> lines = Arrays.stream(said.split("\n")).filter(l -> !l.isBlank()).toList();
    assertThat(lines).as("one message (and a pointer to the help)").hasSizeLessThanOrEqualTo(3);
    assertThat(Path.of("target/never-created")).doesNotExist();
  }

  private static String ports(String s) {
    return s.replace("OWNER_ONLY_KEY", ownerOnlyKey.toString())
        .replace("RESET", Integer.toString(resetting.getLocalPort()))
        .replace("TAKEN1", Integer.toString(taken + 1))
        .replace("TAKEN", Integer.toString(taken))
        .replace("FREE", Integer.toString(free));
  }
}
