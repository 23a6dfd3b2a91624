package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.LeaseBackend;
import io.leasehold.LeaseException;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.server.LocalCluster;
import io.leasehold.spi.LeaseRuntime;
import io.leasehold.testkit.SuiteSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Finding 5 on the core: a grant that no holder believes in — its reply came after the engine gave
 * up, or never came — must not keep the name taken. The lossy process reaches a real 3-node core
 * through an interceptor that delivers its requests but loses or delays chosen replies; its
 * keep-alive stream is untouched, as in a process that is otherwise healthy.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
@Tag("integration")
class CoreGhostGrantTest {

  /** Longer than the contract suite's 2 s, so that a loaded machine does not lose the held leases. */
  private static final Duration TTL = Duration.ofSeconds(4);
  /** One TTL for the core to expire the session, plus room for an election and a loaded machine. */
  private static final Duration FREE_WITHIN = TTL.multipliedBy(3);

  private static LocalCluster cluster;
  /** The gRPC method acquires and releases travel in (the client batches them). */
  private static final String WRITES = "Batch";

  private final List<AutoCloseable> closeLater = new ArrayList<>();
  private CoreClient admin;

  @BeforeAll
  static void startCluster() {
    cluster = CoreFixture.startCluster("ghosts");
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeLater.size() - 1; i >= 0; i--) {
      closeLater.get(i).close();
    }
  }

  private <T extends AutoCloseable> T later(T closeable) {
    closeLater.add(closeable);
    return closeable;
  }

  /** A process whose replies pass through {@code replies}; the production attempt timeout. */
  private CoreBackend lossyBackend(LostReplies replies) {
    LeaseRuntime runtime = later(LeaseRuntime.system("ghost"));
    return later(
        new CoreBackend(
            "leasehold://(lossy)",
            CoreFixture.endpoints(cluster.peers()),
            Duration.ofSeconds(2),
            runtime,
            List.of(replies)));
  }

  private Lease lease(LeaseBackend backend, String name, String owner) {
    return later(backend.newLease(SuiteSettings.forTtl(name, owner, TTL).build()));
  }

  /** The lease's record as the core has it now (a linearizable read). */
  private Optional<KeyValue> record(String name) throws Exception {
    if (admin == null) {
      admin = later(new CoreClient(CoreFixture.endpoints(cluster.peers()), Duration.ofSeconds(2)));
    }
    String key = LeaseWatch.LEASE_PREFIX + name;
    GetResponse found =
        admin.<GetResponse>call((s, o) -> s.get(GetRequest.newBuilder().setKey(key).build(), o))
            .get(10, TimeUnit.SECONDS);
    return found.getKvsList().stream().filter(kv -> kv.getKey().equals(key)).findFirst();
  }

  /** Holds a lease of the lossy process's TTL and drops it, so that its session is granted and its channel up. */
  private void warmUp(LeaseBackend backend) throws Exception {
    Lease warm = lease(backend, "warm-up-" + System.nanoTime(), "warm");
    holdEventually(warm);
    warm.release().get(10, TimeUnit.SECONDS);
  }

  /** Acquires on a backend that may still be connecting and granting its session. */
  private static void holdEventually(Lease lease) {
    await("a first acquire on a fresh backend")
        .ignoreExceptions()
        .atMost(Duration.ofSeconds(20))
        .until(() -> acquired(lease));
  }

  private static boolean acquired(Lease lease) throws Exception {
    return lease.acquire().get(10, TimeUnit.SECONDS);
  }

  private static void assertOutcomeUnknown(CompletableFuture<Boolean> acquire) {
    await("the engine gives up on the acquire").atMost(Duration.ofSeconds(10)).until(acquire::isDone);
    assertThatThrownBy(acquire::join).hasCauseInstanceOf(LeaseException.class);
  }

  @Test
  void aGrantWhoseReplyArrivesAfterTheEngineGaveUpIsReleasedAtOnce() throws Exception {
    LostReplies replies = new LostReplies();
    CoreBackend lossy = lossyBackend(replies);
    LeaseBackend other = later(LeaseBackend.open(cluster.uri()));
    Lease kept = lease(lossy, "kept-late", "a"); // keeps the shared session alive throughout
    holdEventually(kept);
    Lease ghost = lease(lossy, "late-grant", "a");
    Lease next = lease(other, "late-grant", "b");

    replies.delay(TTL, WRITES); // the grant's reply arrives long after the engine's 800 ms
    replies.lose("Get"); // and no read can find the record: only the late reply tells of it
    assertOutcomeUnknown(ghost.acquire());
    replies.pass();
    await("the core granted it").atMost(Duration.ofSeconds(5)).until(() -> record("late-grant").isPresent());

    await("another owner acquires the name once the late grant has arrived")
        .ignoreExceptions() // an acquire that timed out says nothing either way
        .atMost(FREE_WITHIN)
        .until(() -> acquired(next));
    assertThat(ghost.checkAlive()).isFalse();
    assertThat(kept.checkAlive()).as("the session stays alive for the tenure on it").isTrue();
  }

  @Test
  void anAcquireWhoseReplyIsLostIsAbandonedEvenWhileItsSessionIsInUse() throws Exception {
    LostReplies replies = new LostReplies();
    CoreBackend lossy = lossyBackend(replies);
    LeaseBackend other = later(LeaseBackend.open(cluster.uri()));
    Lease kept = lease(lossy, "kept-lost", "a"); // the same TTL: the same session, kept alive
    holdEventually(kept);
    Lease ghost = lease(lossy, "lost-reply", "a");
    Lease next = lease(other, "lost-reply", "b");

    replies.lose(WRITES);
    assertOutcomeUnknown(ghost.acquire());
    replies.pass();

    await("another owner acquires the name while the ghost's session lives on")
        .ignoreExceptions() // an acquire that timed out says nothing either way
        .atMost(FREE_WITHIN)
        .until(() -> acquired(next));
    assertThat(kept.checkAlive()).isTrue();
  }

  @Test
  void aNameWhoseAcquireNeverGetsAnAnswerIsFreeAgainWithinAboutOneTtl() throws Exception {
    // Every reply that could tell the process what happened is lost — the acquire's, and those of
    // the reads and releases that could clean up after it — while its keep-alives flow.
    LostReplies replies = new LostReplies();
    CoreBackend lossy = lossyBackend(replies);
    LeaseBackend other = later(LeaseBackend.open(cluster.uri()));
    warmUp(lossy);
    Lease ghost = lease(lossy, "never-answered", "a");
    Lease next = lease(other, "never-answered", "b");

    replies.lose(WRITES, "Get");
    assertOutcomeUnknown(ghost.acquire());
    await("the core granted it").atMost(Duration.ofSeconds(5)).until(() -> record("never-answered").isPresent());

    await("another owner acquires the name once the session it is on expired")
        .ignoreExceptions() // an acquire that timed out says nothing either way
        .atMost(FREE_WITHIN)
        .until(() -> acquired(next));
    assertThat(next.fencingToken()).isPresent();
  }

  @Test
  void theClientStopsRetryingAnAcquireOnceTheEngineGaveUp() throws Exception {
    LostReplies replies = new LostReplies();
    CoreBackend lossy = lossyBackend(replies);
    warmUp(lossy);
    int before = replies.started(WRITES);
    Lease ghost = lease(lossy, "no-retries", "a");

    replies.lose(WRITES, "Get");
    assertOutcomeUnknown(ghost.acquire()); // after 800 ms; one node has 2 s to answer

    // Without a deadline the client would try the next node at 2 s, and so on through all three.
    await("no acquire is sent after the engine gave up")
        .during(Duration.ofSeconds(3))
        .atMost(Duration.ofSeconds(5))
        .until(() -> replies.started(WRITES) - before == 1);
  }
}
