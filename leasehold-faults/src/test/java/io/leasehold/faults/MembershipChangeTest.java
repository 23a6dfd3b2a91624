package io.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Status;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseLost;
import io.leasehold.LeaseSettings;
import io.leasehold.client.CoreClient;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.MembersRequest;
import io.leasehold.core.proto.MembersResponse;
import io.leasehold.core.proto.NodeStatus;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.RemoveNodeRequest;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.server.LocalCluster;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Membership changes end to end: a 3-node core in child JVMs (as {@code leasehold server} runs
 * them), changed online with {@code leasehold admin} while a lease is held and a client that was
 * given one node's address follows the membership. One scenario, in the order an operator meets
 * it: a node's disk dies (the node is down during the change), a new node started with {@code
 * --join} waits without a vote until it is added, {@code replace-node} adds it and removes the dead
 * one, the leader is killed in the middle of that, and the same command run again finishes it.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class MembershipChangeTest {

  private static final Duration WAIT = Duration.ofSeconds(90);

  private final Path dir = createDir();
  private final Map<String, Process> nodes = new LinkedHashMap<>();
  private final Map<String, Integer> ports = new LinkedHashMap<>();
  private final List<AutoCloseable> closing = new ArrayList<>();

  private static Path createDir() {
    try {
      return Files.createTempDirectory(Path.of("target"), "membership-");
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @AfterEach
  void stop() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
    nodes.values().forEach(Children::kill);
  }

  @Test
  void aDeadNodeIsReplacedOnlineAndNothingAcknowledgedIsLost() throws Exception {
    for (String id : List.of("n1", "n2", "n3")) {
      ports.put(id, LocalCluster.freePortPair());
    }
    String peers = peers("n1", "n2", "n3");
    for (String id : List.of("n1", "n2", "n3")) {
      launch(id, peers, "--bootstrap");
    }
    // A client given only n1's address learns the others from the cluster.
    CoreClient follower = closing(new CoreClient(List.of(address("n1")), Duration.ofSeconds(2)));
    follower.followMembers(Duration.ofMillis(200));
    await("the client learns n2 and n3 from n1").atMost(WAIT).until(() -> follower.endpoints().size() == 3);

    // Acknowledged before any change: a key and a held lease with its fencing token.
    long before = put(follower, "k", "v1").getKv().getModRevision();
    LeaseBackend backend = closing(LeaseBackend.open("leasehold://" + address("n1").getHostString() + ":" + ports.get("n1")));
    Lease lease =
        closing(backend.newLease(LeaseSettings.builder("held", "holder").ttl(Duration.ofSeconds(60)).build()));
    assertThat(lease.acquire().get(30, TimeUnit.SECONDS)).isTrue();
    long token = lease.fencingToken().orElseThrow();
    List<LeaseLost> lost = new CopyOnWriteArrayList<>();
    lease.onLost(lost::add);

    // n3's disk dies: it is down for the whole change.
    Children.kill(nodes.remove("n3"));
    deleteTree(dir.resolve("n3"));

    Cli keepThree = admin("remove-node", "n3");
    assertThat(keepThree.exitCode()).as(keepThree.toString()).isEqualTo(1);
    assertThat(keepThree.err()).contains("removing n3 would leave 2 voting member(s), fewer than 3");
    Cli unknown = admin("remove-node", "n9", "--force");
    assertThat(unknown.exitCode()).as(unknown.toString()).isEqualTo(2);
    assertThat(unknown.err()).contains("id must be a member (n1, n2, n3); was 'n9'");

    // A new node, under a new id and on new ports, joins with an empty directory: it waits, no
    // member and without a vote, until it is added.
    ports.put("n4", LocalCluster.freePortPair());
    launch("n4", peers("n1", "n2", "n4"), "--join");
    CoreClient n4 = closing(new CoreClient(List.of(address("n4")), Duration.ofSeconds(2)));
    NodeStatus waiting = await("n4 answers").atMost(WAIT).ignoreExceptions().until(() -> nodeStatus(n4), s -> true);
    assertThat(waiting.getTerm()).as("a joining node never campaigns").isZero();
    assertThat(membersOf(n4)).as("a node not added refuses to name members")
        .isInstanceOfSatisfying(Status.class, s -> assertThat(s.getDescription()).contains("not a member"));
    // A membership change asked of the node that is no member is refused at once (UNAVAILABLE: the
    // client asks another node), not left waiting for a change it can never see.
    Object removeViaN4;
    try {
      removeViaN4 = n4.<MembersResponse>call((st, o) -> st.removeNode(RemoveNodeRequest.newBuilder().setId("n3").build(), o))
          .get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      removeViaN4 = Status.fromThrowable(e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause());
    }
    assertThat(removeViaN4).isInstanceOfSatisfying(Status.class, s -> assertThat(s.getDescription()).contains("not a member"));
    Cli listed = admin("members");
    assertThat(listed.exitCode()).as(listed.toString()).isZero();
    assertThat(listed.out()).contains("n1=", "n2=").doesNotContain("n4");

    Cli nobody = admin("add-node", "n5=127.0.0.1:" + LocalCluster.freePortPair(), "--timeout", "10s");
    assertThat(nobody.exitCode()).as(nobody.toString()).isEqualTo(1);
    assertThat(nobody.err()).contains("node n5 at 127.0.0.1:").contains("does not answer");

    // n4 replaces n3 (n3 removed first, so no majority on the way needs n4's vote). The leader
    // dies in the middle of it; the command fails or completes, and the same command run again
    // (while the leader restarts) finishes what is left or finds it done.
    String leader = leaderId(follower);
    String replace = "n4=127.0.0.1:" + ports.get("n4");
    CompletableFuture<Cli> adding = CompletableFuture.supplyAsync(() -> admin("replace-node", "n3", replace, "--timeout", "10s"));
    await("n4 is being sent the state").atMost(WAIT).ignoreExceptions().until(() -> nodeStatus(n4).getAppliedIndex() > 0 || adding.isDone());
    leader = leaderId(follower); // the removal of n3 may have moved it
    Children.kill(nodes.remove(leader));
    Cli interrupted = adding.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    launch(leader, peers("n1", "n2", "n4"), null);
    // Run again while the leader restarts: it waits (up to --timeout) for a node that answers.
    Cli again = admin("replace-node", "n3", replace);
    System.out.println("replace-node with the leader " + leader + " killed: " + interrupted + "; run again: " + again);
    assertThat(again.exitCode()).as("interrupted: " + interrupted + "; again: " + again).isEqualTo(0);
    assertThat(again.out()).containsAnyOf("1/2 removed n3", "1/2 done before: n3").containsAnyOf("2/2 added n4", "2/2 done before: n4");
    // The killed leader restarts and an election may be under way: until a leader is known the
    // node answers UNAVAILABLE, so wait for an answer instead of taking the first one.
    MembersResponse members = (MembersResponse) await("the members after the change").atMost(WAIT).ignoreExceptions()
        .until(() -> membersOf(follower), m -> m instanceof MembersResponse);
    assertThat(members.getMembersList()).extracting(m -> m.getId()).containsExactly("n1", "n2", "n4");

    // The client follows: n4 in, n3 out, without a restart; with n1, the only node it was given,
    // down, it still reads and writes.
    await("the client follows the change").atMost(WAIT).until(
        () -> follower.endpoints().stream().map(a -> a.getPort()).toList(),
        p -> p.contains(ports.get("n4")) && !p.contains(ports.get("n3")));
    for (String id : List.of("n1", "n2", "n4")) {
      CoreClient direct = closing(new CoreClient(List.of(address(id)), Duration.ofSeconds(2)));
      await(id + " is a member that knows the leader").atMost(WAIT).ignoreExceptions()
          .until(() -> membersOf(direct), m -> m instanceof MembersResponse);
    }
    Children.kill(nodes.remove("n1"));
    // (If n1 led, n2 and n4 elect a leader first; until then the client is told no node can serve.)
    GetResponse read = await("a read through n2 or n4").atMost(WAIT).ignoreExceptions().until(
        () -> follower.<GetResponse>call((st, o) -> st.get(GetRequest.newBuilder().setKey("k").build(), o)).get(30, TimeUnit.SECONDS),
        r -> true);
    assertThat(read.getKvs(0).getValue().toStringUtf8()).as("acknowledged before the change").isEqualTo("v1");
    // With n1 dead a write needs both n2 and n4, JVMs started during the replace (new, or
    // restarted when the leader was killed): on a loaded 2-core machine the first write can take
    // longer than the client's 2 s deadline (seen once in a clean-clone run: DEADLINE_EXCEEDED at
    // n2), so it is asked again, as the read above is, until it answers (same key, same value).
    long after = await("a write through n2 and n4").atMost(WAIT).ignoreExceptions().until(
        () -> put(follower, "k", "v2"), r -> true).getKv().getModRevision();
    assertThat(after).as("revisions (fencing tokens) keep increasing").isGreaterThan(before).isGreaterThan(token);

    // The lease was held throughout, and a new tenure's token is above it.
    assertThat(lost).as("the holder never lost its lease").isEmpty();
    assertThat(lease.checkAlive()).isTrue();
    lease.release().get(30, TimeUnit.SECONDS);
    assertThat(lease.acquire().get(30, TimeUnit.SECONDS)).isTrue();
    assertThat(lease.fencingToken().orElseThrow()).isGreaterThan(after);
  }

  // ---- helpers ----

  private record Cli(int exitCode, String out, String err) {}

  private Cli admin(String... args) {
    List<String> line = new ArrayList<>(List.of("admin"));
    line.addAll(List.of(args));
    line.add("--backend");
    line.add("leasehold://" + String.join(",", ports.keySet().stream().map(id -> "127.0.0.1:" + ports.get(id)).toList()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = io.leasehold.cli.Main.execute(new PrintWriter(out, true), new PrintWriter(err, true), line.toArray(String[]::new));
    return new Cli(code, out.toString(), err.toString());
  }

  private void launch(String id, String peers, String flag) {
    List<String> cmd = new ArrayList<>(List.of(
        Children.java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        "-cp", System.getProperty("java.class.path"), "io.leasehold.cli.Main", "server",
        "--id", id, "--peers", peers, "--data-dir", dir.resolve(id).toAbsolutePath().toString(), "--verbose"));
    if (flag != null) {
      cmd.add(flag);
    }
    nodes.put(id, Children.start(cmd, dir.resolve(id + ".log")));
  }

  private String peers(String... ids) {
    return String.join(",", Stream.of(ids).map(id -> id + "=127.0.0.1:" + ports.get(id)).toList());
  }

  private InetSocketAddress address(String id) {
    return new InetSocketAddress("127.0.0.1", ports.get(id));
  }

  private <T extends AutoCloseable> T closing(T c) {
    closing.add(0, c);
    return c;
  }

  private static PutResponse put(CoreClient c, String key, String value) throws Exception {
    PutRequest put =
        PutRequest.newBuilder().setCall(c.newCall()).setKey(key).setValue(com.google.protobuf.ByteString.copyFromUtf8(value)).build();
    return c.<PutResponse>call((st, o) -> st.put(put, o)).get(30, TimeUnit.SECONDS);
  }

  private static NodeStatus nodeStatus(CoreClient c) throws Exception {
    StatusResponse s =
        c.<StatusResponse>call((st, o) -> st.status(StatusRequest.newBuilder().setNodeOnly(true).build(), o)).get(5, TimeUnit.SECONDS);
    return s.getNodes(0);
  }

  private static String leaderId(CoreClient c) {
    return await("a leader").atMost(WAIT).ignoreExceptions()
        .until(() -> c.<StatusResponse>call((st, o) -> st.status(StatusRequest.getDefaultInstance(), o)).get(5, TimeUnit.SECONDS).getLeaderId(),
            l -> !l.isEmpty());
  }

  /** {@return the members, or the status the node refused with} */
  private static Object membersOf(CoreClient c) throws Exception {
    try {
      return c.<MembersResponse>call((st, o) -> st.members(MembersRequest.getDefaultInstance(), o)).get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      return Status.fromThrowable(e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause());
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
