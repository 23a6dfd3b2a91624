package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;

import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class WatchHubTest {

  private final WatchHub hub = new WatchHub(4);

  private static Event put(String key, long revision) {
    return Event.newBuilder().setType(Event.Type.PUT).setKv(KeyValue.newBuilder().setKey(key).setModRevision(revision)).build();
  }

  private static class Recorder implements WatchHub.Sink {
    final List<WatchResponse> received = new CopyOnWriteArrayList<>();

    @Override
    public void send(WatchResponse response) {
      received.add(response);
    }

    @Override
    public boolean isClosed() {
      return false;
    }

    volatile boolean completed;

    @Override
    public void complete() {
      completed = true;
    }

    List<Long> revisions() {
      return received.stream().flatMap(r -> r.getEventsList().stream()).map(e -> e.getKv().getModRevision()).toList();
    }
  }

  @Test
  void aWatcherResumingFromARetainedRevisionMissesNothingAndSeesOnlyItsPrefix() {
    for (long r = 1; r <= 3; r++) {
      hub.publish(List.of(put(r == 2 ? "other/x" : "app/x", r)));
    }
    Recorder w = new Recorder();
    hub.watch("app/", true, 1, w);
    assertThat(w.completed).isFalse();
    hub.publish(List.of(put("app/y", 4)));
    assertThat(w.revisions()).containsExactly(1L, 3L, 4L);
  }

  /**
   * The status page asks for the last lease events every second; with a history of other keys'
   * events it used to scan the whole history (100,000 events) under the hub's lock, which the
   * fan-out thread needs. It looks at the newest events only.
   */
  @Test
  void theRecentLeaseEventsAreLookedForOnlyAmongTheNewestEvents() {
    WatchHub big = new WatchHub(2 * WatchHub.RECENT_SCAN);
    big.publish(List.of(put("/_leasehold/leases/old", 1)));
    for (long r = 2; r <= WatchHub.RECENT_SCAN + 1; r++) {
      big.publish(List.of(put("other/" + (r % 10), r)));
    }
    assertThat(big.recent("/_leasehold/leases/", 50)).as("beyond the newest events looked at").isEmpty();
    big.publish(List.of(put("/_leasehold/leases/new", WatchHub.RECENT_SCAN + 2)));
    assertThat(big.recent("/_leasehold/leases/", 50)).extracting(e -> e.getKv().getKey())
        .containsExactly("/_leasehold/leases/new");
  }

  @Test
  void aWatcherAskingForForgottenHistoryIsToldWhereItMayStart() {
    for (long r = 1; r <= 6; r++) {
      hub.publish(List.of(put("k", r)));
    }
    Recorder w = new Recorder();
    hub.watch("k", false, 2, w);
    assertThat(w.completed).isTrue();
    assertThat(w.received).hasSize(1);
    assertThat(w.received.get(0).getCompactRevision()).isEqualTo(3);
    Recorder ok = new Recorder();
    hub.watch("k", false, 3, ok);
    assertThat(ok.completed).isFalse();
    assertThat(ok.revisions()).containsExactly(3L, 4L, 5L, 6L);
  }

  @Test
  void aWatcherNamingSessionsSeesOnlyTheirKeys() {
    Recorder mine = new Recorder();
    hub.watch("app/", true, java.util.Set.of(7L), false, 0, mine);
    hub.publish(List.of(put("app/mine", 1).toBuilder().setKv(KeyValue.newBuilder().setKey("app/mine").setModRevision(1).setSessionId(7)).build()));
    hub.publish(List.of(put("app/theirs", 2).toBuilder().setKv(KeyValue.newBuilder().setKey("app/theirs").setModRevision(2).setSessionId(8)).build()));
    hub.publish(List.of(put("app/unattached", 3)));
    assertThat(mine.revisions()).containsExactly(1L);
  }

  private static Event delete(String key, long revision, String cause) {
    return Event.newBuilder()
        .setType(Event.Type.DELETE)
        .setKv(KeyValue.newBuilder().setKey(key).setModRevision(revision))
        .setCause(cause)
        .build();
  }

  @Test
  void aWatcherOfLossesOnlyIsNotSentPutsOrReleasesButEveryOtherDelete() {
    Recorder losses = new Recorder();
    Recorder all = new Recorder();
    hub.watch("app/", true, java.util.Set.of(), true, 0, losses);
    hub.watch("app/", true, java.util.Set.of(), false, 0, all);
    hub.publish(List.of(put("app/a", 1)));
    hub.publish(List.of(delete("app/a", 2, io.leasehold.core.proto.DeleteCauses.RELEASED)));
    hub.publish(List.of(delete("app/b", 3, "session expired")));
    hub.publish(List.of(delete("app/c", 4, "")));
    hub.publish(List.of(delete("app/d", 5, "replaced by a new tenure of the same holder"), put("app/d", 5)));
    assertThat(losses.revisions()).containsExactly(3L, 4L, 5L);
    assertThat(all.revisions()).containsExactly(1L, 2L, 3L, 4L, 5L, 5L);
  }

  @Test
  void aWatcherOfLossesOnlyResumingFromThePastIsSentOnlyItsLosses() {
    hub.publish(List.of(put("app/a", 1)));
    hub.publish(List.of(delete("app/a", 2, io.leasehold.core.proto.DeleteCauses.RELEASED)));
    hub.publish(List.of(delete("app/b", 3, "session expired")));
    hub.publish(List.of(delete("app/c", 4, io.leasehold.core.proto.DeleteCauses.SESSION_CLOSED)));
    Recorder losses = new Recorder();
    hub.watch("app/", true, java.util.Set.of(), true, 1, losses);
    assertThat(losses.completed).isFalse();
    assertThat(losses.revisions()).as("a session its holder closed is no loss").containsExactly(3L);
  }

  @Test
  void aSnapshotInstallTellsRunningWatchersToReRead() {
    Recorder w = new Recorder();
    hub.watch("k", false, 0, w);
    hub.reset(42);
    assertThat(w.received).hasSize(1);
    assertThat(w.received.get(0).getCompactRevision()).isEqualTo(43);
    hub.publish(List.of(put("k", 43)));
    assertThat(w.revisions()).as("a dropped watcher gets nothing more").isEmpty();
  }

  @Test
  void afterASnapshotLoadOlderRevisionsAreUnknown() {
    hub.reset(10);
    Recorder w = new Recorder();
    hub.watch("k", false, 10, w);
    assertThat(w.completed).isTrue();
    assertThat(w.received.get(0).getCompactRevision()).isEqualTo(11);
  }

  /**
   * A watcher whose keys do not change is told how far it has been sent everything, so that it
   * resumes from there — on a node whose history starts after its last event (restarted from a
   * snapshot since), which would otherwise tell it to read everything again.
   */
  @Test
  void aWatcherWhoseKeysDoNotChangeIsToldItsProgressAndResumesFromItOnANodeRestartedSince() {
    Recorder quiet = new Recorder();
    hub.watch("mine", false, 1, quiet);
    hub.publish(List.of(put("mine", 1)));
    for (long r = 2; r <= 8; r++) {
      hub.publish(List.of(put("other", r)));
    }
    hub.reportProgress();
    assertThat(quiet.received).last().extracting(WatchResponse::getProgressRevision).isEqualTo(8L);
    assertThat(quiet.revisions()).containsExactly(1L);

    // A node restarted from its snapshot at revision 6 keeps no history before 7.
    WatchHub restarted = new WatchHub(4);
    restarted.reset(6);
    restarted.publish(List.of(put("other", 7)));
    restarted.publish(List.of(put("other", 8)));
    restarted.publish(List.of(put("mine", 9)));
    Recorder fromLastEvent = new Recorder();
    restarted.watch("mine", false, 2, fromLastEvent);
    assertThat(fromLastEvent.completed).as("resumed after the last event seen").isTrue();
    Recorder fromProgress = new Recorder();
    restarted.watch("mine", false, 9, fromProgress);
    assertThat(fromProgress.completed).as("resumed after the progress").isFalse();
    assertThat(fromProgress.revisions()).containsExactly(9L);
  }

  @Test
  void progressIsReportedOnlyWhenTheRevisionMoved() {
    Recorder w = new Recorder();
    hub.watch("k", false, 0, w);
    hub.reportProgress();
    assertThat(w.received).as("nothing published yet").isEmpty();
    hub.publish(List.of(put("x", 5)));
    hub.reportProgress();
    hub.reportProgress();
    assertThat(w.received).extracting(WatchResponse::getProgressRevision).containsExactly(5L);
  }

  private static final ByteString MIB = ByteString.copyFrom(new byte[1 << 20]);

  private static Event big(String key, long revision) {
    return Event.newBuilder()
        .setType(Event.Type.PUT)
        .setKv(KeyValue.newBuilder().setKey(key).setValue(MIB).setModRevision(revision))
        .build();
  }

  /**
   * 70 events of 1 MiB are more than the history's 64 MiB: the oldest go, and a watcher resuming
   * from before what is kept is told where it may start, as when the count is exceeded.
   */
  @Test
  void theHistoryIsBoundedInBytesAndAWatcherFromBeforeItIsToldToReRead() {
    WatchHub hub = new WatchHub(100_000);
    for (long r = 1; r <= 70; r++) {
      hub.publish(List.of(big("big", r)));
    }
    Recorder w = new Recorder();
    hub.watch("big", false, 1, w);
    await().atMost(Duration.ofSeconds(10)).until(() -> !w.received.isEmpty());
    assertThat(w.revisions()).as("no event from before the retained range").isEmpty();
    long from = w.received.get(0).getCompactRevision();
    assertThat(from).as("the oldest revision kept").isBetween(2L, 70L);
    assertThat((70 - from + 1) * MIB.size()).as("bytes kept").isLessThanOrEqualTo(WatchHubTest.SIXTY_FOUR_MIB);
    Recorder resumed = new Recorder();
    hub.watch("big", false, from, resumed);
    await().atMost(Duration.ofSeconds(10)).until(() -> resumed.revisions().size() == 70 - from + 1);
    assertThat(resumed.revisions()).first().isEqualTo(from);
  }

  private static final long SIXTY_FOUR_MIB = 64L << 20;

  /** A replay of much history comes in responses of bounded events and bytes, all in order. */
  @Test
  void aReplayComesInResponsesABoundedSizeAndAllInOrder() {
    WatchHub hub = new WatchHub(100_000);
    for (long r = 1; r <= 3000; r++) {
      hub.publish(List.of(put("app/x", r)));
    }
    for (long r = 3001; r <= 3005; r++) {
      hub.publish(List.of(big("app/big", r)));
    }
    Recorder w = new Recorder();
    hub.watch("app/", true, 1, w);
    await().atMost(Duration.ofSeconds(10)).until(() -> w.revisions().size() == 3005);
    assertThat(w.revisions()).isSortedAccordingTo(Long::compare).doesNotHaveDuplicates();
    for (WatchResponse r : w.received) {
      assertThat(r.getEventsCount()).as("events in one response").isLessThanOrEqualTo(1000);
      assertThat(r.getSerializedSize()).as("bytes of one response, against a default client's 4 MiB").isLessThan(4 << 20);
    }
  }

  /**
   * A watcher's replay is sent while the applying thread publishes: publishing does not wait for
   * it, even while the watcher's stream holds up the replay.
   */
  @Test
  void aReplayDoesNotHoldUpPublishing() throws Exception {
    WatchHub hub = new WatchHub(100_000);
    for (long r = 1; r <= 10; r++) {
      hub.publish(List.of(put("k", r)));
    }
    CountDownLatch inSend = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Recorder w =
        new Recorder() {
          @Override
          public void send(WatchResponse response) {
            inSend.countDown();
            try {
              release.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            super.send(response);
          }
        };
    CompletableFuture<Void> watching = CompletableFuture.runAsync(() -> hub.watch("k", false, 1, w));
    assertThat(inSend.await(10, TimeUnit.SECONDS)).as("the replay is being sent").isTrue();
    CompletableFuture<Void> publishing = CompletableFuture.runAsync(() -> hub.publish(List.of(put("k", 11))));
    try {
      await().atMost(Duration.ofSeconds(5)).until(publishing::isDone);
    } finally {
      release.countDown();
    }
    watching.get(10, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(10)).until(() -> w.revisions().size() == 11);
    assertThat(w.revisions()).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L);
  }

  /** Exact keys and nested prefixes, the empty one included: each watcher gets its events once. */
  @Test
  void watchersOfNestedPrefixesAndExactKeysGetExactlyTheirEvents() {
    WatchHub hub = new WatchHub(100);
    String[] prefixes = {"", "a", "ab", "abc", "abd", "b", "abcd"};
    List<Recorder> ofPrefix = new java.util.ArrayList<>();
    for (String p : prefixes) {
      Recorder r = new Recorder();
      hub.watch(p, true, 0, r);
      ofPrefix.add(r);
    }
    Recorder exactAbc = new Recorder();
    hub.watch("abc", false, 0, exactAbc);
    Recorder exactAb = new Recorder();
    hub.watch("ab", false, 0, exactAb);
    String[] keys = {"abc", "ab", "abce", "b", "aa", "c", "abd", "abcd", "a"};
    for (int i = 0; i < keys.length; i++) {
      hub.publish(List.of(put(keys[i], i + 1)));
    }
    for (int p = 0; p < prefixes.length; p++) {
      List<Long> expected = new java.util.ArrayList<>();
      for (int i = 0; i < keys.length; i++) {
        if (keys[i].startsWith(prefixes[p])) {
          expected.add(i + 1L);
        }
      }
      Recorder r = ofPrefix.get(p);
      await().atMost(Duration.ofSeconds(10)).until(() -> r.revisions().size() >= expected.size());
      assertThat(r.revisions()).as("prefix \"%s\"", prefixes[p]).isEqualTo(expected);
    }
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(exactAbc.revisions()).containsExactly(1L));
    assertThat(exactAb.revisions()).containsExactly(2L);
  }
}
