package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseException;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.CallId;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.core.proto.StatusRequest;
import io.leasehold.core.proto.StatusResponse;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import io.leasehold.server.CoreNode;
import io.leasehold.server.LocalCluster;
import io.leasehold.testkit.LossRecorder;
import io.leasehold.testkit.SuiteSettings;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What only the core must do: survive its leader, expire keys everywhere, keep data, catch up. */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreClusterTest {

  private static final Duration TTL = Duration.ofSeconds(2);
  private static final Duration PATIENCE = Duration.ofSeconds(30);

  private final List<AutoCloseable> closeLater = new ArrayList<>();
  private LocalCluster cluster;

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private LocalCluster start(String name, java.util.function.UnaryOperator<io.leasehold.server.NodeConfig> tuning) throws Exception {
    Path root = Files.createTempDirectory(Path.of("target"), name + "-");
    cluster = LocalCluster.start(3, 0, root, c -> tuning.apply(c.withElectionTimeout(Duration.ofMillis(150))));
    return cluster;
  }

  private <T extends AutoCloseable> T later(T closeable) {
    closeLater.add(closeable);
    return closeable;
  }

  private CoreClient client(List<InetSocketAddress> endpoints) {
    return later(new CoreClient(endpoints, Duration.ofSeconds(2)));
  }

  private CoreClient client() {
    return client(CoreFixture.endpoints(cluster.peers()));
  }

  @Test
  void killingTheLeaderWhileALeaseIsHeldNeitherLosesItNorLetsAnotherOwnerIn() throws Exception {
    start("leader-kill", c -> c);
    LeaseBackend holderBackend = later(LeaseBackend.open(cluster.uri()));
    LeaseBackend otherBackend = later(LeaseBackend.open(cluster.uri()));
    // A TTL well above the failover time (detection, election, the client finding the new leader).
    Duration ttl = Duration.ofSeconds(6);
    Lease held = later(holderBackend.newLease(SuiteSettings.forTtl("kill-leader", "holder", ttl).build()));
    LossRecorder losses = new LossRecorder(io.leasehold.Ticker.system());
    held.onLost(losses);
    assertThat(held.acquire().get(10, TimeUnit.SECONDS)).isTrue();
    long token = held.fencingToken().orElseThrow();

    int oldLeader = cluster.leader().orElseThrow();
    cluster.stopNode(oldLeader);
    int newLeader = cluster.awaitLeader(PATIENCE);
    assertThat(newLeader).isNotEqualTo(oldLeader);

    // Held throughout two TTLs after the failover: renewals found the new leader in time.
    await("the holder keeps its lease across the failover")
        .during(ttl.multipliedBy(2))
        .atMost(ttl.multipliedBy(4))
        .until(held::checkAlive);
    assertThat(losses.count()).as("onLost calls").isZero();
    assertThat(held.fencingToken()).hasValue(token);

    Lease other = later(otherBackend.newLease(SuiteSettings.forTtl("kill-leader", "other", ttl).acquireRetries(0).build()));
    assertThat(other.acquire().get(10, TimeUnit.SECONDS)).as("another owner's acquire").isFalse();
  }

  @Test
  void anExpiredSessionsKeysVanishOnEveryReplicaAndWatchersSeeTheDeletesInOrder() throws Exception {
    start("expiry", c -> c);
    CoreClient owner = client();
    CoreClient watcher = client();
    GrantRequest grant = GrantRequest.newBuilder().setCall(owner.newCall()).setOwner("short-lived").setTtlMillis(500).build();
    long session = owner.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(10, TimeUnit.SECONDS).getSessionId();
    long firstRevision = 0;
    for (String key : List.of("app/a", "app/b", "app/c")) {
      PutRequest put =
          PutRequest.newBuilder().setCall(owner.newCall()).setKey(key).setValue(ByteString.copyFromUtf8("v")).setSessionId(session).build();
      KeyValue kv = owner.<PutResponse>call((s, o) -> s.put(put, o)).get(10, TimeUnit.SECONDS).getKv();
      if (firstRevision == 0) {
        firstRevision = kv.getModRevision();
      }
    }
    List<Event> events = new ArrayList<>();
    Runnable cancel =
        watcher.watch(
            WatchRequest.newBuilder().setKey("app/").setPrefix(true).setStartRevision(firstRevision).build(),
            collect(events));
    later(cancel::run);

    // No keep-alive is ever sent: the leader expires the session after its TTL.
    for (int i = 0; i < 3; i++) {
      CoreNode node = cluster.node(i).orElseThrow();
      await("node " + i + " deletes the expired session's keys")
          .atMost(PATIENCE)
          .until(() -> node.localRead("app/a").isEmpty() && node.localRead("app/b").isEmpty() && node.localRead("app/c").isEmpty());
    }
    await("the watcher sees three puts and three deletes")
        .atMost(PATIENCE)
        .until(() -> {
          synchronized (events) {
            return events.size() >= 6;
          }
        });
    synchronized (events) {
      assertThat(events).extracting(Event::getType)
          .containsExactly(Event.Type.PUT, Event.Type.PUT, Event.Type.PUT, Event.Type.DELETE, Event.Type.DELETE, Event.Type.DELETE);
      assertThat(events.subList(3, 6)).allSatisfy(e -> assertThat(e.getCause()).isEqualTo("session expired"));
      List<Long> revisions = events.stream().map(e -> e.getKv().getModRevision()).toList();
      assertThat(revisions).as("revisions in order").isSorted();
    }
  }

  @Test
  void aWholeClusterRestartKeepsKeysSessionsAndLeaseRecords() throws Exception {
    start("restart", c -> c);
    CoreClient c = client();
    PutRequest put = PutRequest.newBuilder().setCall(c.newCall()).setKey("config").setValue(ByteString.copyFromUtf8("42")).build();
    c.<PutResponse>call((s, o) -> s.put(put, o)).get(10, TimeUnit.SECONDS);
    GrantRequest grant = GrantRequest.newBuilder().setCall(c.newCall()).setOwner("survivor").setTtlMillis(60_000).build();
    long session = c.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(10, TimeUnit.SECONDS).getSessionId();
    AcquireResponse acquired = acquire(c, c.newCall(), "restart-lease", "survivor#0000000000000001", 1, session);
    assertThat(acquired.getAcquired()).isTrue();

    cluster.restartAll();

    CoreClient after = client();
    assertThat(get(after, "config").getKvsList()).extracting(kv -> kv.getValue().toStringUtf8()).containsExactly("42");
    List<KeyValue> record = get(after, LeaseWatch.LEASE_PREFIX + "restart-lease").getKvsList();
    assertThat(record).hasSize(1);
    assertThat(record.get(0).getCreateRevision()).as("the tenure's token").isEqualTo(acquired.getToken());
    assertThat(record.get(0).getSessionId()).isEqualTo(session);
    // The session survived too: the same holder's retried acquire is still its tenure.
    assertThat(acquire(after, after.newCall(), "restart-lease", "survivor#0000000000000001", 1, session).getToken())
        .isEqualTo(acquired.getToken());
  }

  @Test
  void aRetriedAcquireMakesOneTenure() throws Exception {
    start("retry", c -> c);
    CoreClient c = client();
    GrantRequest grant = GrantRequest.newBuilder().setCall(c.newCall()).setOwner("o").setTtlMillis(60_000).build();
    long session = c.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(10, TimeUnit.SECONDS).getSessionId();
    CallId call = c.newCall();
    AcquireResponse first = acquire(c, call, "once", "o#0000000000000001", 7, session);
    long revisionAfterFirst = get(c, "nothing").getRevision();

    // The reply was lost; the client retries the same call, through another node.
    CoreClient viaLastNode = client(List.of(CoreFixture.endpoints(cluster.peers()).get(2)));
    AcquireResponse retried = acquire(viaLastNode, call, "once", "o#0000000000000001", 7, session);
    // A retry under a new call id but the same acquire request is recognised too.
    AcquireResponse sameRequest = acquire(c, c.newCall(), "once", "o#0000000000000001", 7, session);

    assertThat(retried).isEqualTo(first);
    assertThat(sameRequest.getToken()).isEqualTo(first.getToken());
    assertThat(get(c, "nothing").getRevision()).as("no second write happened").isEqualTo(revisionAfterFirst);
  }

  @Test
  void aFollowerThatWasDownCatchesUpFromASnapshot() throws Exception {
    start("snapshot", c -> c.withSnapshots(20, 16 * 1024));
    int leader = cluster.leader().orElseThrow();
    int follower = (leader + 1) % 3;
    long stoppedAt = cluster.node(follower).orElseThrow().appliedIndex();
    cluster.stopNode(follower);

    CoreClient c = client();
    ByteString value = ByteString.copyFrom(new byte[1024]);
    for (int i = 0; i < 200; i++) {
      int n = i;
      PutRequest put = PutRequest.newBuilder().setCall(c.newCall()).setKey("bulk/" + (n % 50)).setValue(value).build();
      c.<PutResponse>call((s, o) -> s.put(put, o)).get(10, TimeUnit.SECONDS);
    }
    put(c, "last", "done");

    CoreNode back = cluster.startNode(follower);
    await("the follower applies the last write")
        .atMost(PATIENCE)
        .until(() -> back.localRead("last").map(kv -> kv.getValue().toStringUtf8()).orElse("").equals("done"));
    assertThat(back.loadedSnapshotIndex())
        .as("the follower loaded a snapshot newer than where it stopped (it was installed from the leader)")
        .isGreaterThan(stoppedAt);
  }

  @Test
  void aFollowerCutOffFromTheLeaderDoesNotServeStaleLinearizableReads() throws Exception {
    start("stale", c -> c);
    CoreClient c = client();
    put(c, "k", "v1");
    int leader = cluster.leader().orElseThrow();
    int follower = (leader + 1) % 3;
    CoreNode f = cluster.node(follower).orElseThrow();
    await().atMost(PATIENCE).until(() -> f.localRead("k").isPresent());
    cluster.stopNode(follower);
    put(c, "k", "v2");

    // The follower comes back alone: the others are gone, so it cannot reach any leader.
    cluster.stopNode(leader);
    cluster.stopNode(3 - leader - follower);
    CoreNode alone = cluster.startNode(follower);
    assertThat(alone.localRead("k")).map(kv -> kv.getValue().toStringUtf8()).hasValue("v1");

    CoreClient viaFollower =
        later(new CoreClient(List.of(CoreFixture.endpoints(cluster.peers()).get(follower)), Duration.ofSeconds(2)));
    assertThatThrownBy(() -> get(viaFollower, "k"))
        .as("a linearizable read through a node without a leader fails instead of answering v1")
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(LeaseException.class);
  }

  @Test
  void aWatchResumedOnAnotherNodeAfterItsNodeDiedMissesNothing() throws Exception {
    start("watch-resume", c -> c);
    List<InetSocketAddress> nodes = CoreFixture.endpoints(cluster.peers());
    int leader = cluster.leader().orElseThrow();
    int watched = (leader + 1) % 3; // a follower serves the first watch
    int other = (leader + 2) % 3;
    CoreClient writer = client();
    put(writer, "cfg/a", "1");
    long from = get(writer, "cfg/a").getRevision();

    List<Event> events = new ArrayList<>();
    Runnable first = client(List.of(nodes.get(watched))).watch(watch(from), collect(events));
    await().atMost(PATIENCE).until(() -> size(events) == 1);
    cluster.stopNode(watched);
    put(writer, "cfg/b", "2"); // written while no watch runs
    put(writer, "cfg/c", "3");
    first.run();

    long next;
    synchronized (events) {
      next = events.get(events.size() - 1).getKv().getModRevision() + 1;
    }
    Runnable resumed = client(List.of(nodes.get(other))).watch(watch(next), collect(events));
    later(resumed::run);
    put(writer, "cfg/d", "4");
    await("every put, each once, in order").atMost(PATIENCE).until(() -> size(events) == 4);
    synchronized (events) {
      assertThat(events).extracting(e -> e.getKv().getKey()).containsExactly("cfg/a", "cfg/b", "cfg/c", "cfg/d");
    }
  }

  /**
   * A watch whose keys do not change is told, about once a second, the revision it has been sent
   * everything up to, so that after a reconnect it resumes from there and not from its last event
   * (which a node restarted since may no longer have; it would then read everything again).
   */
  @Test
  void aQuietWatchIsToldHowFarItHasBeenSentEverything() throws Exception {
    start("watch-progress", c -> c);
    CoreClient writer = client();
    List<Long> progress = new ArrayList<>();
    later(client().watch(
        WatchRequest.newBuilder().setKey("cfg/quiet").build(),
        responses(value -> {
          synchronized (progress) {
            progress.add(value.getProgressRevision());
          }
        }))::run);
    put(writer, "elsewhere/x", "1");
    long written = get(writer, "elsewhere/x").getKvs(0).getModRevision();
    await("a progress report at or past the unrelated write")
        .atMost(PATIENCE)
        .until(() -> {
          synchronized (progress) {
            return progress.stream().anyMatch(r -> r >= written);
          }
        });
  }

  private static WatchRequest watch(long fromRevision) {
    return WatchRequest.newBuilder().setKey("cfg/").setPrefix(true).setStartRevision(fromRevision).build();
  }

  private static int size(List<Event> events) {
    synchronized (events) {
      return events.size();
    }
  }

  private static StreamObserver<WatchResponse> collect(List<Event> into) {
    return responses(value -> {
      synchronized (into) {
        into.addAll(value.getEventsList());
      }
    });
  }

  /** {@return an observer that hands every response to {@code each} and ignores the stream's end} */
  private static StreamObserver<WatchResponse> responses(java.util.function.Consumer<WatchResponse> each) {
    return new StreamObserver<>() {
      @Override
      public void onNext(WatchResponse value) {
        each.accept(value);
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    };
  }

  @Test
  void closingABackendRevokesItsSessionsAtOnce() throws Exception {
    start("close", c -> c);
    LeaseBackend backend = LeaseBackend.open(cluster.uri());
    Lease lease = backend.newLease(SuiteSettings.forTtl("closing", "holder", Duration.ofMinutes(5)).build());
    assertThat(lease.acquire().get(10, TimeUnit.SECONDS)).isTrue();
    CoreClient c = client();
    assertThat(sessions(c)).isEqualTo(1);

    backend.close();

    assertThat(sessions(c)).as("sessions left after close (a 5 min TTL would keep one otherwise)").isZero();
    assertThat(get(c, LeaseWatch.LEASE_PREFIX + "closing").getKvsList()).isEmpty();
  }

  private static long sessions(CoreClient c) throws Exception {
    return c.<StatusResponse>call((s, o) -> s.status(StatusRequest.getDefaultInstance(), o)).get(10, TimeUnit.SECONDS).getSessions();
  }

  private static void put(CoreClient c, String key, String value) throws Exception {
    PutRequest put = PutRequest.newBuilder().setCall(c.newCall()).setKey(key).setValue(ByteString.copyFromUtf8(value)).build();
    c.<PutResponse>call((s, o) -> s.put(put, o)).get(10, TimeUnit.SECONDS);
  }

  private static GetResponse get(CoreClient c, String key) throws Exception {
    GetRequest get = GetRequest.newBuilder().setKey(key).build();
    return c.<GetResponse>call((s, o) -> s.get(get, o)).get(20, TimeUnit.SECONDS);
  }

  private static AcquireResponse acquire(CoreClient c, CallId call, String name, String holder, long requestId, long session)
      throws Exception {
    AcquireRequest request =
        AcquireRequest.newBuilder().setCall(call).setName(name).setHolder(holder).setRequestId(requestId).setSessionId(session).build();
    return c.<AcquireResponse>call((s, o) -> s.acquire(request, o)).get(10, TimeUnit.SECONDS);
  }
}
