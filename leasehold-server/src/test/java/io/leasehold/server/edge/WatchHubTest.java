package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;

import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class WatchHubTest {

  private final WatchHub hub = new WatchHub(4);

  private static Event put(String key, long revision) {
    return Event.newBuilder().setType(Event.Type.PUT).setKv(KeyValue.newBuilder().setKey(key).setModRevision(revision)).build();
  }

  private static final class Recorder implements WatchHub.Sink {
    final List<WatchResponse> received = new ArrayList<>();

    @Override
    public void send(WatchResponse response) {
      received.add(response);
    }

    @Override
    public boolean isClosed() {
      return false;
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
    assertThat(hub.watch("app/", true, 1, w)).isTrue();
    hub.publish(List.of(put("app/y", 4)));
    assertThat(w.revisions()).containsExactly(1L, 3L, 4L);
  }

  @Test
  void aWatcherAskingForForgottenHistoryIsToldWhereItMayStart() {
    for (long r = 1; r <= 6; r++) {
      hub.publish(List.of(put("k", r)));
    }
    Recorder w = new Recorder();
    assertThat(hub.watch("k", false, 2, w)).isFalse();
    assertThat(w.received).hasSize(1);
    assertThat(w.received.get(0).getCompactRevision()).isEqualTo(3);
    Recorder ok = new Recorder();
    assertThat(hub.watch("k", false, 3, ok)).isTrue();
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
    assertThat(hub.watch("app/", true, java.util.Set.of(), true, 1, losses)).isTrue();
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
    assertThat(hub.watch("k", false, 10, w)).isFalse();
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
    assertThat(restarted.watch("mine", false, 2, fromLastEvent)).as("resumed after the last event seen").isFalse();
    Recorder fromProgress = new Recorder();
    assertThat(restarted.watch("mine", false, 9, fromProgress)).as("resumed after the progress").isTrue();
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
}
