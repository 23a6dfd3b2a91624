package io.leasehold.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.leasehold.Lease;
import io.leasehold.core.proto.AcquireRequest;
import io.leasehold.core.proto.AcquireResponse;
import io.leasehold.core.proto.BatchOp;
import io.leasehold.core.proto.DeleteRequest;
import io.leasehold.core.proto.DeleteResponse;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.GrantRequest;
import io.leasehold.core.proto.GrantResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.PutRequest;
import io.leasehold.core.proto.PutResponse;
import io.leasehold.server.LocalCluster;
import io.leasehold.server.NodeConfig;
import io.leasehold.testkit.SuiteSettings;
import com.google.protobuf.ByteString;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A holder's lease watch that resumes from a revision its node no longer has re-reads its lease
 * keys (a resync). Here the cluster holds 7,500 other leases with the longest names and holders
 * the core allows, about 4.6 MB of keys: more than one gRPC answer may carry by default (4 MiB).
 * The resync used to read all of them in one answer and failed for good; it then read them in
 * pages; it now reads only the keys of the holder's own sessions, in pages.
 *
 * <p>The history is made to run out as after a restart under churn: the holder is cut off, writes
 * go on until each node has taken a snapshot after the cut, and every node restarts from its
 * snapshot (its history starts there), so the holder's watch resumes from before it.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
@Tag("integration")
class PagedResyncTest {

  static final int LEASES = 7_500;
  /** Entries between snapshots: the churn during a cut writes more than this, one entry each. */
  private static final int SNAPSHOT_EVERY = 100;
  private static final Duration HOLDER_TTL = Duration.ofSeconds(60);

  private static LocalCluster cluster;
  private static CoreClient filler;

  @BeforeAll
  static void startAndFill() throws Exception {
    Path root = Files.createTempDirectory(Path.of("target"), "paged-resync-");
    cluster =
        LocalCluster.start(
            3, 0, root, c -> c.withElectionTimeout(Duration.ofMillis(150))
                .withSnapshots(SNAPSHOT_EVERY, NodeConfig.DEFAULT_LOG_SEGMENT_BYTES));
    CoreFixture.awaitServing(cluster);
    filler = new CoreClient(CoreFixture.endpoints(cluster.peers()), Duration.ofSeconds(10));
    GrantRequest grant =
        GrantRequest.newBuilder().setCall(filler.newCall()).setOwner("filler").setTtlMillis(600_000).build();
    long session = filler.<GrantResponse>call((s, o) -> s.grant(grant, o)).get(30, TimeUnit.SECONDS).getSessionId();
    for (int from = 0; from < LEASES; from += 500) {
      List<CompletableFuture<AcquireResponse>> acquires = new ArrayList<>();
      for (int i = from; i < Math.min(LEASES, from + 500); i++) {
        AcquireRequest acquire =
            AcquireRequest.newBuilder()
                .setCall(filler.newCall())
                .setName(fillName(i))
                .setHolder(FILL_HOLDER)
                .setRequestId(1)
                .setSessionId(session)
                .build();
        acquires.add(filler.batched(BatchOp.newBuilder().setAcquire(acquire).build(), AcquireResponse.parser()));
      }
      for (CompletableFuture<AcquireResponse> a : acquires) {
        assertThat(a.get(60, TimeUnit.SECONDS).getAcquired()).isTrue();
      }
    }
    // The keys alone, without the protocol's few bytes per key, are more than one default answer.
    long bytes = (long) LEASES * (LeaseWatch.LEASE_PREFIX.length() + fillName(0).length() + FILL_HOLDER.length());
    assertThat(bytes).as("bytes of the filled lease keys").isGreaterThan(4L * 1024 * 1024);
  }

  @AfterAll
  static void stop() {
    if (filler != null) {
      filler.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  /** The longest lease name the core allows (256 characters), sorting after "l" and before "n". */
  static String fillName(int i) {
    String head = String.format("m-%05d-", i);
    return head + "x".repeat(256 - head.length());
  }

  /** The longest holder the core allows is 320 characters. */
  static final String FILL_HOLDER = "f".repeat(320 - 17) + "#0000000000000001";

  @Test
  void aResyncOfMoreLeaseKeysThanOneAnswerHoldsCompletes() throws Exception {
    CoreFixture fixture = new CoreFixture(cluster);
    try {
      CoreFixture.CoreContender holder = (CoreFixture.CoreContender) fixture.newContender();
      Lease held = holder.backend().newLease(SuiteSettings.forTtl("a-held", "holder", HOLDER_TTL).build());
      assertThat(held.acquire().get(30, TimeUnit.SECONDS)).isTrue();
      LeaseWatch watch = ((CoreBackend) holder.backend()).leaseWatch();
      long before = watch.resyncedAt();

      historyRunsOutFor(holder);

      await("the holder's lease watch re-reads every lease key after its history ran out")
          .atMost(Duration.ofSeconds(90))
          .until(() -> watch.resyncedAt() > before);
      assertThat(held.checkAlive()).as("the lease, still in the core, is still held").isTrue();

      // A client from before paged reads asks for everything in one answer: the node refuses it
      // with its reason instead of building an answer the client could not take.
      GetRequest unpaged = GetRequest.newBuilder().setKey(LeaseWatch.LEASE_PREFIX).setPrefix(true).build();
      assertThatThrownBy(() -> filler.<GetResponse>call((s, o) -> s.get(unpaged, o)).get(30, TimeUnit.SECONDS))
          .hasMessageContaining("RESOURCE_EXHAUSTED")
          .hasMessageContaining("read them in pages");
    } finally {
      fixture.close();
    }
  }

  /**
   * The pages of a resync are read at different revisions while leases change. The resync reads
   * the keys of the holder's own sessions, here in pages of 2 (a-first and m-held, then z-last).
   * When the first page has been read and before the holder looks at it: the holder acquires a
   * lease whose key falls in that page (read before it existed), and an operator revokes one of
   * the holder's leases in that page (read while it existed) and one in the last page (not read
   * yet). At the end the holder holds exactly what the core holds: the new lease is not taken for
   * lost, the two revoked ones are lost.
   */
  @Test
  void leasesThatChangeWhileTheResyncPagesEndUpAsTheCoreHasThem() throws Exception {
    CoreFixture fixture = new CoreFixture(cluster);
    try {
      CoreFixture.CoreContender holder = (CoreFixture.CoreContender) fixture.newContender();
      CoreBackend backend = (CoreBackend) holder.backend();
      Map<String, Lease> leases = new TreeMap<>();
      Set<String> lost = ConcurrentHashMap.newKeySet();
      for (String name : List.of("a-first", "a-fresh", "m-held", "z-last")) {
        Lease lease = backend.newLease(SuiteSettings.forTtl(name, "holder", HOLDER_TTL).build());
        lease.onLost(why -> lost.add(name));
        leases.put(name, lease);
      }
      assertThat(leases.get("a-first").acquire().get(30, TimeUnit.SECONDS)).isTrue();
      assertThat(leases.get("m-held").acquire().get(30, TimeUnit.SECONDS)).isTrue();
      assertThat(leases.get("z-last").acquire().get(30, TimeUnit.SECONDS)).isTrue();
      LeaseWatch watch = backend.leaseWatch();
      long before = watch.resyncedAt();
      List<Integer> pageSizes = new CopyOnWriteArrayList<>();
      AtomicBoolean changed = new AtomicBoolean();
      watch.pagesForTests(
          2,
          page -> {
            pageSizes.add(page.kvs().size());
            if (page.first() && changed.compareAndSet(false, true)) {
              assertThat(page.covers(LeaseWatch.LEASE_PREFIX + "a-fresh")).isTrue();
              assertThat(page.covers(LeaseWatch.LEASE_PREFIX + "z-last")).isFalse();
              try {
                assertThat(leases.get("a-fresh").acquire().get(30, TimeUnit.SECONDS)).isTrue();
                revoke("a-first");
                revoke("z-last");
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            }
          });

      historyRunsOutFor(holder);

      await("the holder's lease watch re-reads its lease keys")
          .atMost(Duration.ofSeconds(90))
          .until(() -> watch.resyncedAt() > before);
      assertThat(pageSizes.get(0)).as("keys in the first page: the holder's own, none of the filler's").isEqualTo(2);
      await("the revoked leases are lost")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(lost).containsExactlyInAnyOrder("a-first", "z-last"));
      Lease fresh = leases.get("a-fresh");
      assertThat(fresh.checkAlive()).as("the lease acquired between the pages is held").isTrue();
      GetResponse inCore =
          filler.<GetResponse>call(
                  (s, o) -> s.get(GetRequest.newBuilder().setKey(LeaseWatch.LEASE_PREFIX + "a-fresh").build(), o))
              .get(30, TimeUnit.SECONDS);
      assertThat(inCore.getKvsList()).extracting(KeyValue::getCreateRevision).containsExactly(fresh.fencingToken().orElseThrow());
      assertThat(lost).as("leases lost").containsExactlyInAnyOrder("a-first", "z-last");
    } finally {
      fixture.close();
    }
  }

  @Test
  void badPageFieldsAreRefusedNamingTheField() {
    GetRequest limitOnOneKey = GetRequest.newBuilder().setKey("k").setLimit(10).build();
    assertThatThrownBy(() -> filler.<GetResponse>call((s, o) -> s.get(limitOnOneKey, o)).get(30, TimeUnit.SECONDS))
        .hasMessageContaining("INVALID_ARGUMENT")
        .hasMessageContaining("limit and start_after are for prefix reads");
    GetRequest longAfter =
        GetRequest.newBuilder().setKey("k").setPrefix(true).setLimit(10).setStartAfter("k".repeat(4097)).build();
    assertThatThrownBy(() -> filler.<GetResponse>call((s, o) -> s.get(longAfter, o)).get(30, TimeUnit.SECONDS))
        .hasMessageContaining("INVALID_ARGUMENT")
        .hasMessageContaining("start_after must be at most 4096 bytes");
  }

  private static void revoke(String name) throws Exception {
    DeleteRequest delete =
        DeleteRequest.newBuilder().setCall(filler.newCall()).setKey(LeaseWatch.LEASE_PREFIX + name).build();
    assertThat(filler.<DeleteResponse>call((s, o) -> s.delete(delete, o)).get(30, TimeUnit.SECONDS).getDeleted()).isTrue();
  }

  /**
   * Cuts {@code holder} off, writes until every node has a snapshot newer than the cut, restarts
   * every node (each starts its history at its snapshot) and lets the holder back: its watch
   * resumes from before the snapshot, so the node tells it to re-read.
   */
  static void historyRunsOutFor(CoreFixture.CoreContender holder) throws Exception {
    holder.cutOff();
    ByteString value = ByteString.copyFromUtf8("churn");
    for (int i = 0; i < 3 * SNAPSHOT_EVERY / 2; i++) {
      PutRequest put = PutRequest.newBuilder().setCall(filler.newCall()).setKey("churn/" + (i % 10)).setValue(value).build();
      filler.<PutResponse>call((s, o) -> s.put(put, o)).get(30, TimeUnit.SECONDS);
    }
    cluster.restartAll();
    holder.resetConnections();
    holder.heal();
  }
}
