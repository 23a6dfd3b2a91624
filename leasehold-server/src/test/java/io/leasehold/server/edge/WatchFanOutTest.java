package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The hub's fan-out on an executor of its own, as a node runs it. */
@Timeout(60)
class WatchFanOutTest {

  private final ExecutorService fanOut = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() {
    fanOut.shutdownNow();
  }

  private static Event put(String key, long revision) {
    return Event.newBuilder().setType(Event.Type.PUT).setKv(KeyValue.newBuilder().setKey(key).setModRevision(revision)).build();
  }

  private static class Recorder implements WatchHub.Sink {
    final List<WatchResponse> received = new CopyOnWriteArrayList<>();
    final List<String> threads = new CopyOnWriteArrayList<>();
    volatile boolean ready = true;
    volatile Runnable waiting;

    @Override
    public void send(WatchResponse response) {
      threads.add(Thread.currentThread().getName());
      received.add(response);
    }

    @Override
    public boolean isClosed() {
      return false;
    }

    @Override
    public boolean ready() {
      return ready;
    }

    @Override
    public void whenReady(Runnable then) {
      if (ready) {
        then.run();
      } else {
        waiting = then;
      }
    }

    List<Long> revisions() {
      return received.stream().flatMap(r -> r.getEventsList().stream()).map(e -> e.getKv().getModRevision()).toList();
    }
  }

  @Test
  void eventsAreHandedOnOffThePublishingThread() {
    WatchHub hub = new WatchHub(1000, WatchHub.DEFAULT_MAX_BYTES, fanOut);
    Recorder w = new Recorder();
    hub.watch("k", false, 0, w);
    hub.reportProgress(); // a task after the watch's: once it ran, the watch is live
    await().atMost(Duration.ofSeconds(10)).until(() -> hub.retained()[0] == 0);
    hub.publish(List.of(put("k", 1)));
    await().atMost(Duration.ofSeconds(10)).until(() -> w.revisions().size() == 1);
    assertThat(w.threads).doesNotContain(Thread.currentThread().getName());
  }

  /**
   * Watchers starting in the past, now and in the future while one writer publishes: each gets
   * every event of its own from its start, once and in order, across the hand-over from its
   * replay to the live fan-out.
   */
  @Test
  void everyWatcherGetsItsEventsOnceAndInOrderAcrossTheHandOverFromReplay() throws Exception {
    WatchHub hub = new WatchHub(100_000, WatchHub.DEFAULT_MAX_BYTES, fanOut);
    int events = 20_000;
    for (long r = 1; r <= 5000; r++) {
      hub.publish(List.of(put("k/" + (r % 10), r)));
    }
    Thread writer =
        new Thread(
            () -> {
              for (long r = 5001; r <= events; r++) {
                hub.publish(List.of(put("k/" + (r % 10), r)));
              }
            });
    writer.start();
    List<long[]> starts = new ArrayList<>(); // {key digit or -1 for the prefix, start revision}
    List<Recorder> watchers = new ArrayList<>();
    long[] startAt = {1, 2500, 4999, 7000, 12_000, 19_999};
    for (long from : startAt) {
      for (int digit = -1; digit < 10; digit += 4) {
        Recorder w = new Recorder();
        hub.watch(digit < 0 ? "k/" : "k/" + digit, digit < 0, from, w);
        starts.add(new long[] {digit, from});
        watchers.add(w);
      }
    }
    writer.join();
    for (int i = 0; i < watchers.size(); i++) {
      long digit = starts.get(i)[0];
      long from = starts.get(i)[1];
      List<Long> expected = new ArrayList<>();
      for (long r = from; r <= events; r++) {
        if (digit < 0 || r % 10 == digit) {
          expected.add(r);
        }
      }
      Recorder w = watchers.get(i);
      await().atMost(Duration.ofSeconds(30)).until(() -> w.revisions().size() >= expected.size());
      assertThat(w.revisions()).as("watcher of %s from %s", digit, from).isEqualTo(expected);
    }
  }

  /** A collecting executor: the test runs the hub's fan-out when it wants. */
  private static final class Manual implements Executor {
    final ArrayDeque<Runnable> tasks = new ArrayDeque<>();

    @Override
    public synchronized void execute(Runnable task) {
      tasks.add(task);
    }

    void runAll() {
      while (true) {
        Runnable next;
        synchronized (this) {
          next = tasks.poll();
        }
        if (next == null) {
          return;
        }
        next.run();
      }
    }
  }

  /**
   * A fan-out that falls behind by more than the history holds cannot hand on what is gone: every
   * watcher is told to re-read, and memory stays within the history's bound.
   */
  @Test
  void aFanOutBehindTheHistoryTellsEveryWatcherToReRead() {
    Manual manual = new Manual();
    WatchHub hub = new WatchHub(4, WatchHub.DEFAULT_MAX_BYTES, manual);
    Recorder w = new Recorder();
    hub.watch("k", false, 0, w);
    manual.runAll();
    for (long r = 1; r <= 10; r++) {
      hub.publish(List.of(put("k", r)));
    }
    assertThat(hub.retained()[0]).isEqualTo(4);
    manual.runAll();
    assertThat(w.revisions()).isEmpty();
    assertThat(w.received).extracting(WatchResponse::getCompactRevision).containsExactly(7L);
  }

  /** A replay waits while its stream is not ready, and goes on when it is: never a backlog. */
  @Test
  void aReplayWaitsForItsStreamToBeReady() {
    Manual manual = new Manual();
    WatchHub hub = new WatchHub(100_000, WatchHub.DEFAULT_MAX_BYTES, manual);
    for (long r = 1; r <= 3 * WatchHub.MAX_RESPONSE_EVENTS; r++) {
      hub.publish(List.of(put("k", r)));
    }
    manual.runAll();
    Recorder w = new Recorder();
    w.ready = false;
    hub.watch("k", false, 1, w);
    manual.runAll();
    assertThat(w.received).isEmpty();
    w.ready = true;
    w.waiting.run();
    manual.runAll();
    assertThat(w.revisions()).hasSize(3 * WatchHub.MAX_RESPONSE_EVENTS);
    assertThat(w.received).hasSize(3);
  }
}
