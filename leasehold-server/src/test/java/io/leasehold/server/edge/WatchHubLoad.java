package io.leasehold.server.edge;

import com.google.protobuf.ByteString;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchResponse;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A tool run by hand, never a test: one {@link WatchHub} with many watchers on distinct keys and
 * one writer publishing as the applying thread does. Prints the time to add the watchers, the
 * applying thread's time per event (what {@code publish} costs the caller), how long until every
 * watcher was sent its events (on the hub's fan-out thread), how long a resumed watch takes to be
 * replayed its history, and the heap the history holds.
 *
 * <pre>
 * java -cp CLASSPATH io.leasehold.server.edge.WatchHubLoad WATCHERS EVENTS VALUE_BYTES
 * </pre>
 */
public final class WatchHubLoad {

  private WatchHubLoad() {}

  /** How long a round waits for its deliveries before it says they did not all arrive. */
  private static final long PATIENCE_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(60);

  /** Watchers told to re-read (the fan-out fell behind the history): their events never come. */
  private static final AtomicLong RESETS = new AtomicLong();

  private static final class Counting implements WatchHub.Sink {
    private final AtomicLong total;

    Counting(AtomicLong total) {
      this.total = total;
    }

    @Override
    public void send(WatchResponse response) {
      total.addAndGet(response.getEventsCount());
      if (response.getCompactRevision() > 0) {
        RESETS.incrementAndGet();
      }
    }

    @Override
    public boolean isClosed() {
      return false;
    }
  }

  public static void main(String[] args) throws InterruptedException {
    int watchers = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    int events = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
    int valueBytes = args.length > 2 ? Integer.parseInt(args[2]) : 100;
    ByteString value = ByteString.copyFrom(new byte[valueBytes]);
    java.util.concurrent.ExecutorService fanOut = java.util.concurrent.Executors.newSingleThreadExecutor();
    Event[] prepared = new Event[events];
    for (int i = 0; i < events; i++) {
      prepared[i] =
          Event.newBuilder()
              .setType(Event.Type.PUT)
              .setKv(KeyValue.newBuilder().setKey("k/" + (i % watchers)).setValue(ByteString.copyFrom(value.toByteArray())).setModRevision(i + 1))
              .build();
    }
    for (int round = 1; round <= 2; round++) {
      WatchHub hub = new WatchHub(WatchHub.DEFAULT_CAPACITY, WatchHub.DEFAULT_MAX_BYTES, fanOut);
      AtomicLong delivered = new AtomicLong();
      long t0 = System.nanoTime();
      for (int w = 0; w < watchers; w++) {
        hub.watch("k/" + w, false, 0, new Counting(delivered));
      }
      long added = System.nanoTime() - t0;
      long t1 = System.nanoTime();
      for (int i = 0; i < events; i++) {
        hub.publish(List.of(prepared[i]));
      }
      long published = System.nanoTime() - t1;
      awaitCount(delivered, events, "delivered events");
      long allSent = System.nanoTime() - t1;
      AtomicLong replayed = new AtomicLong();
      long t2 = System.nanoTime();
      long resumeFrom = Math.max(1, events - 50_000);
      hub.watch("k/1", false, resumeFrom, new Counting(replayed));
      long resumeCall = System.nanoTime() - t2;
      long expected = 0;
      for (int i = 0; i < events; i++) {
        if (i % watchers == 1 && i + 1 >= resumeFrom) {
          expected++;
        }
      }
      awaitCount(replayed, expected, "replayed events");
      long resumeDone = System.nanoTime() - t2;
      System.out.printf(
          "round %d: %,d watchers, %,d events of %,d value bytes: adding watchers %,d ms; publish %.2f us/event"
              + " on the applying thread (%,.0f events/s); all sent after %,d ms (%,.0f events/s);"
              + " a resumed watch's call %.2f ms, its replay of %,d events done after %.2f ms%n",
          round, watchers, events, valueBytes, added / 1_000_000, published / 1e3 / events, events / (published / 1e9),
          allSent / 1_000_000, events / (allSent / 1e9), resumeCall / 1e6, expected, resumeDone / 1e6);
      hub.reset(events);
    }
    prepared = null;
    System.gc();
    long heapBefore = usedHeap();
    WatchHub hub = new WatchHub(WatchHub.DEFAULT_CAPACITY, WatchHub.DEFAULT_MAX_BYTES, fanOut);
    for (int i = 0; i < events; i++) {
      hub.publish(
          List.of(
              Event.newBuilder()
                  .setType(Event.Type.PUT)
                  .setKv(KeyValue.newBuilder().setKey("k/" + (i % watchers)).setValue(ByteString.copyFrom(new byte[valueBytes])).setModRevision(i + 1))
                  .build()));
    }
    System.gc();
    long heapAfter = usedHeap();
    System.out.printf("history of %,d events of %,d value bytes published: heap held by the hub %,d MiB (%s)%n",
        events, valueBytes, (heapAfter - heapBefore) >> 20, java.util.Arrays.toString(hub.retained()));
    fanOut.shutdownNow();
  }

  private static long usedHeap() {
    Runtime r = Runtime.getRuntime();
    return r.totalMemory() - r.freeMemory();
  }

  /**
   * Waits until {@code count} reaches {@code target}; stops early, saying why, when watchers were
   * told to re-read or when the patience ran out, so that a burst that outran the history cannot
   * hang the tool.
   */
  private static void awaitCount(AtomicLong count, long target, String what) {
    try {
      org.awaitility.Awaitility.await(what)
          .atMost(java.time.Duration.ofNanos(PATIENCE_NANOS))
          .pollInterval(java.time.Duration.ofMillis(1))
          .until(() -> count.get() >= target || RESETS.get() > 0);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      // Reported below, as an early stop is.
    }
    if (count.get() < target) {
      System.out.printf(
          "%s: %d of %d, %d watchers told to re-read (the fan-out fell behind the history)%n",
          what, count.get(), target, RESETS.get());
    }
  }
}
