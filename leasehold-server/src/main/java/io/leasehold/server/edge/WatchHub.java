package io.leasehold.server.edge;

import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The watch streams of one node. Events arrive from the state machine as entries are applied, in
 * revision order; each watcher gets those that match its key or prefix. Recent events are kept,
 * up to a bound in events and one in bytes (oldest dropped first, a revision's events together),
 * so that a watcher can start, or resume after a reconnect, from a past revision and miss
 * nothing; a watcher asking for a revision older than that is told the oldest revision it can ask
 * for.
 *
 * <p>The applying thread only appends to the history ({@link #publish}: a few field writes under
 * the history's lock, which is held by others only to copy out a bounded slice) and wakes the
 * fan-out. Everything else runs one task at a time on the fan-out executor: handing events on to
 * the watchers they match (exact keys in a hash map, prefixes in a sorted map, so an event costs
 * the watchers it matches, not all of them), replaying history to a watcher that starts in the
 * past (a bounded slice at a time, in responses of at most {@value #MAX_RESPONSE_EVENTS} events
 * and about {@value #MAX_RESPONSE_BYTES} bytes, paced by the stream's readiness), progress
 * reports, and resets. One task at a time keeps every watcher's events in revision order, and a
 * replay hands over to the live fan-out at exactly the event the fan-out has reached. If the
 * fan-out falls so far behind that the history no longer holds the events it has yet to hand on,
 * every watcher is told to re-read, as after a snapshot install: memory stays bounded.
 */
public final class WatchHub {

  /** Where one watcher's events go; called from the fan-out, so it must not block. */
  interface Sink {
    void send(WatchResponse response);

    boolean isClosed();

    /** {@return whether a response sent now goes straight on, rather than into a backlog} */
    default boolean ready() {
      return true;
    }

    /** Runs {@code then} once the sink is {@link #ready()} (at once if it is); one waits at most. */
    default void whenReady(Runnable then) {
      then.run();
    }

    /** Ends the stream once what was sent has gone: nothing more is sent. */
    default void complete() {}
  }

  /** Default events the history keeps at most. */
  public static final int DEFAULT_CAPACITY = 100_000;

  /** Default bytes (serialized events) the history keeps at most. */
  public static final long DEFAULT_MAX_BYTES = 64L << 20;

  /** Events in one response at most. */
  static final int MAX_RESPONSE_EVENTS = 1000;

  /**
   * Bytes of events in one response at most, unless a single event is larger (at most about 1 MiB
   * of value and 4 KiB of key): every response stays well under a default client's 4 MiB.
   */
  static final int MAX_RESPONSE_BYTES = 1 << 20;

  /** Events copied out of the history per step of the fan-out or of a replay. */
  static final int SLICE = 4096;

  /** The newest events {@link #recent} looks at, at most: its work under the lock is bounded. */
  static final int RECENT_SCAN = 10_000;

  private static final class Watcher {
    final String key;
    final boolean prefix;
    final Set<Long> sessions;
    final boolean lossesOnly;
    final Sink sink;
    /** Events of older revisions are not for it (it started later). */
    final long fromRevision;
    /** While it catches up: the sequence number of the next history event to replay to it. */
    long cursor;
    /** Its events of the revision being handed on; fan-out only. */
    List<Event> pending;

    Watcher(String key, boolean prefix, Set<Long> sessions, boolean lossesOnly, long fromRevision, Sink sink) {
      this.key = key;
      this.prefix = prefix;
      this.sessions = sessions;
      this.lossesOnly = lossesOnly;
      this.fromRevision = fromRevision;
      this.sink = sink;
    }

    /** Whether an event of its key is for it: its sessions, losses only, its start. */
    boolean accepts(Event e) {
      if (lossesOnly
          && (e.getType() == Event.Type.PUT
              || e.getCause().equals(DeleteCauses.RELEASED)
              || e.getCause().equals(DeleteCauses.SESSION_CLOSED))) {
        return false;
      }
      if (!sessions.isEmpty() && !sessions.contains(e.getKv().getSessionId())) {
        return false;
      }
      return e.getKv().getModRevision() >= fromRevision;
    }

    boolean matches(Event e) {
      String k = e.getKv().getKey();
      return (prefix ? k.startsWith(key) : k.equals(key)) && accepts(e);
    }
  }

  private final int capacity;
  private final long maxBytes;
  /** Runs the fan-out's tasks one at a time, in order. */
  private final Serial fanOut;

  // The history, guarded by this. Event number (sequence) s is at ring[(head + s - firstSeq) & mask].
  private Event[] ring = new Event[64];
  private int head;
  private int size;
  /** The sequence number of the oldest event held. */
  private long firstSeq;
  /** Serialized bytes of the events held. */
  private long bytes;
  /** Every event with a revision above this one is in the history. */
  private long retainedAfter;
  /** Counts {@link #reset}s, so that the fan-out sees each. */
  private long resets;
  /** The revision of the last reset. */
  private long resetRevision;

  private final AtomicBoolean pumpScheduled = new AtomicBoolean();

  // The fan-out's own state: touched on its tasks only.
  private long pumpNext;
  /** The revision up to which every live watcher was sent every event: what progress reports. */
  private long deliveredRevision;
  /** The revision the last progress report named; none is sent again until it moves. */
  private long progressSent;
  private long resetsSeen;
  private final Map<String, List<Watcher>> exact = new HashMap<>();
  private final TreeMap<String, List<Watcher>> prefixes = new TreeMap<>();
  private final Set<Watcher> live = new HashSet<>();
  private final Set<Watcher> catchingUp = new HashSet<>();
  private final Event[] slice = new Event[SLICE];
  private final List<Watcher> touched = new ArrayList<>();

  /** A hub with the default bounds whose fan-out runs on the callers' threads (for tests). */
  public WatchHub(int capacity) {
    this(capacity, DEFAULT_MAX_BYTES, Runnable::run);
  }

  /**
   * @param capacity events the history keeps at most
   * @param maxBytes serialized bytes of events the history keeps at most
   * @param fanOut where the fan-out runs (one thread: the hub runs one task at a time anyway); a
   *     direct executor runs it on the thread that publishes or watches
   */
  public WatchHub(int capacity, long maxBytes, Executor fanOut) {
    this.capacity = capacity;
    this.maxBytes = maxBytes;
    this.fanOut = new Serial(fanOut);
  }

  /**
   * The state was replaced (snapshot loaded) at {@code revision}: older history is unknown. Every
   * watcher may have missed events up to it, so each is told to re-read and watch again.
   */
  public void reset(long revision) {
    synchronized (this) {
      firstSeq += size;
      java.util.Arrays.fill(ring, null);
      head = 0;
      size = 0;
      bytes = 0;
      retainedAfter = revision;
      resetRevision = revision;
      resets++;
    }
    fanOut.execute(this::seeResets);
  }

  /** Events of one applied entry, all of one revision: kept, and handed to the fan-out. */
  public void publish(List<Event> events) {
    if (events.isEmpty()) {
      return;
    }
    synchronized (this) {
      for (int i = 0; i < events.size(); i++) {
        append(events.get(i));
      }
      while (size > capacity || bytes > maxBytes) {
        long revision = removeFirst();
        // Events of one revision leave together, so "after retainedAfter" stays exact.
        while (size > 0 && at(firstSeq).getKv().getModRevision() == revision) {
          removeFirst();
        }
        retainedAfter = revision;
      }
    }
    if (pumpScheduled.compareAndSet(false, true)) {
      fanOut.execute(this::pump);
    }
  }

  private void append(Event e) {
    if (size == ring.length) {
      Event[] grown = new Event[ring.length * 2];
      for (int i = 0; i < size; i++) {
        grown[i] = ring[(head + i) & (ring.length - 1)];
      }
      ring = grown;
      head = 0;
    }
    ring[(head + size) & (ring.length - 1)] = e;
    size++;
    bytes += e.getSerializedSize();
  }

  /** {@return the revision of the oldest event, which is dropped} */
  private long removeFirst() {
    Event e = ring[head];
    ring[head] = null;
    head = (head + 1) & (ring.length - 1);
    size--;
    firstSeq++;
    bytes -= e.getSerializedSize();
    return e.getKv().getModRevision();
  }

  private Event at(long seq) {
    return ring[(int) ((head + (seq - firstSeq)) & (ring.length - 1))];
  }

  /** {@return the sequence number of the first held event of {@code revision} or later} */
  private long firstAtOrAfter(long revision) {
    long lo = firstSeq;
    long hi = firstSeq + size;
    while (lo < hi) {
      long mid = (lo + hi) >>> 1;
      if (at(mid).getKv().getModRevision() < revision) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Copies up to {@link #SLICE} events from {@code from} into {@link #slice}, up to {@code end}
   * and ending with a whole revision where that leaves any. Under this lock; fan-out only.
   *
   * @return how many
   */
  private int copySlice(long from, long end) {
    int n = (int) Math.min(SLICE, end - from);
    for (int i = 0; i < n; i++) {
      slice[i] = at(from + i);
    }
    if (from + n < end) {
      long cut = slice[n - 1].getKv().getModRevision();
      if (at(from + n).getKv().getModRevision() == cut) {
        int whole = n;
        while (whole > 0 && slice[whole - 1].getKv().getModRevision() == cut) {
          whole--;
        }
        if (whole > 0) {
          n = whole;
        }
      }
    }
    return n;
  }

  /** Fan-out: takes note of resets since it last looked; every watcher is told to re-read. */
  private void seeResets() {
    long revision;
    long first;
    synchronized (this) {
      if (resets == resetsSeen) {
        return;
      }
      resetsSeen = resets;
      revision = resetRevision;
      first = firstSeq;
    }
    dropEveryone(revision + 1);
    pumpNext = first;
    deliveredRevision = revision;
  }

  /** Fan-out: tells every watcher to re-read from {@code compactRevision}, and forgets them. */
  private void dropEveryone(long compactRevision) {
    WatchResponse compacted = WatchResponse.newBuilder().setCompactRevision(compactRevision).build();
    for (Set<Watcher> set : List.of(live, catchingUp)) {
      for (Watcher w : set) {
        if (!w.sink.isClosed()) {
          w.sink.send(compacted);
        }
      }
      set.clear();
    }
    exact.clear();
    prefixes.clear();
  }

  /** Fan-out: hands on the next slice of the history to the live watchers it matches. */
  private void pump() {
    pumpScheduled.set(false);
    seeResets();
    int n;
    boolean more;
    long compactAt = 0;
    synchronized (this) {
      long end = firstSeq + size;
      if (pumpNext < firstSeq) {
        // Behind the history: what it has yet to hand on is gone.
        compactAt = retainedAfter + 1;
        pumpNext = firstSeq;
        n = 0;
      } else {
        n = pumpNext >= end ? 0 : copySlice(pumpNext, end);
      }
      more = pumpNext + n < end;
    }
    if (compactAt != 0) {
      dropEveryone(compactAt);
      deliveredRevision = compactAt - 1;
    }
    long revision = -1;
    for (int i = 0; i < n; i++) {
      Event e = slice[i];
      slice[i] = null;
      long r = e.getKv().getModRevision();
      if (r != revision) {
        flushTouched();
        revision = r;
      }
      String key = e.getKv().getKey();
      List<Watcher> ofKey = exact.get(key);
      if (ofKey != null) {
        collect(ofKey, e);
      }
      collectPrefixes(key, e);
    }
    flushTouched();
    pumpNext += n;
    if (n > 0 && !more) {
      deliveredRevision = revision;
    }
    if (more && pumpScheduled.compareAndSet(false, true)) {
      fanOut.execute(this::pump); // the rest after the tasks waiting now (replays, progress)
    }
  }

  /**
   * Every prefix held that {@code key} starts with: the sorted map's floor of the key, then of
   * the key cut to what it shares with that floor, and so on — each step either finds a match or
   * shortens the key, and never visits a prefix that does not match more than once per step.
   */
  private void collectPrefixes(String key, Event e) {
    if (prefixes.isEmpty()) {
      return;
    }
    String bound = key;
    while (true) {
      Map.Entry<String, List<Watcher>> floor = prefixes.floorEntry(bound);
      if (floor == null) {
        return;
      }
      String p = floor.getKey();
      if (key.startsWith(p)) {
        collect(floor.getValue(), e);
        if (p.isEmpty()) {
          return;
        }
        bound = p.substring(0, p.length() - 1);
      } else {
        int common = 0;
        int most = Math.min(p.length(), bound.length());
        while (common < most && p.charAt(common) == key.charAt(common)) {
          common++;
        }
        bound = key.substring(0, common);
      }
    }
  }

  private void collect(List<Watcher> watchers, Event e) {
    for (int i = 0; i < watchers.size(); i++) {
      Watcher w = watchers.get(i);
      if (w.accepts(e)) {
        if (w.pending == null) {
          w.pending = new ArrayList<>(1);
          touched.add(w);
        }
        w.pending.add(e);
      }
    }
  }

  /** Sends each touched watcher its events of the revision just handed on. */
  private void flushTouched() {
    for (int i = 0; i < touched.size(); i++) {
      Watcher w = touched.get(i);
      List<Event> events = w.pending;
      w.pending = null;
      if (w.sink.isClosed()) {
        forget(w);
        continue;
      }
      sendInResponses(w.sink, events);
    }
    touched.clear();
  }

  /** Sends {@code events} in responses of at most the bounds. */
  private static void sendInResponses(Sink sink, List<Event> events) {
    int from = 0;
    while (from < events.size()) {
      WatchResponse.Builder response = WatchResponse.newBuilder();
      long responseBytes = 0;
      int i = from;
      while (i < events.size() && response.getEventsCount() < MAX_RESPONSE_EVENTS) {
        int eventBytes = events.get(i).getSerializedSize();
        if (response.getEventsCount() > 0 && responseBytes + eventBytes > MAX_RESPONSE_BYTES) {
          break;
        }
        response.addEvents(events.get(i));
        responseBytes += eventBytes;
        i++;
      }
      sink.send(response.build());
      from = i;
    }
  }

  /** Fan-out: adds a watcher to the live ones. */
  private void goLive(Watcher w) {
    catchingUp.remove(w);
    live.add(w);
    (w.prefix ? prefixes : exact).computeIfAbsent(w.key, k -> new ArrayList<>(1)).add(w);
  }

  /** Fan-out: removes a watcher. */
  private void forget(Watcher w) {
    catchingUp.remove(w);
    if (live.remove(w)) {
      Map<String, List<Watcher>> index = w.prefix ? prefixes : exact;
      List<Watcher> ofKey = index.get(w.key);
      if (ofKey != null) {
        ofKey.remove(w);
        if (ofKey.isEmpty()) {
          index.remove(w.key);
        }
      }
    }
  }

  /**
   * Tells every watcher that it has been sent every matching event up to the latest revision
   * handed on, if that moved since the last report: a watcher whose keys do not change would
   * otherwise resume, after a reconnect, from the revision of the last event it saw — older than
   * the history of a node restarted since, which then makes it read everything again. A task of
   * the fan-out, so no event of a later revision can have been sent before the report. Also
   * forgets watchers whose streams ended.
   */
  public void reportProgress() {
    fanOut.execute(this::progress);
  }

  private void progress() {
    seeResets();
    List<Watcher> closed = new ArrayList<>();
    for (Watcher w : live) {
      if (w.sink.isClosed()) {
        closed.add(w);
      }
    }
    closed.forEach(this::forget);
    if (deliveredRevision == progressSent) {
      return;
    }
    progressSent = deliveredRevision;
    WatchResponse progress = WatchResponse.newBuilder().setProgressRevision(deliveredRevision).build();
    for (Watcher w : live) {
      w.sink.send(progress);
    }
  }

  /**
   * The latest retained events of keys under {@code prefix}, for the status page: read from the
   * history kept for watchers anyway, so nothing is added to the applying thread's work; only
   * the newest {@value #RECENT_SCAN} events are looked at.
   *
   * @param max how many at most
   * @return oldest first
   */
  public synchronized List<Event> recent(String prefix, int max) {
    ArrayDeque<Event> recent = new ArrayDeque<>();
    // At most RECENT_SCAN events looked at under the hub's lock (the fan-out thread needs it), not
    // the whole history: a history of other keys' events would be scanned whole on every poll.
    long oldest = Math.max(firstSeq, firstSeq + size - RECENT_SCAN);
    for (long seq = firstSeq + size - 1; seq >= oldest && recent.size() < max; seq--) {
      Event e = at(seq);
      if (e.getKv().getKey().startsWith(prefix)) {
        recent.addFirst(e);
      }
    }
    return List.copyOf(recent);
  }

  /** {@return the events and the serialized bytes the history holds now} */
  synchronized long[] retained() {
    return new long[] {size, bytes};
  }

  /**
   * Starts a watch.
   *
   * @param startRevision the first revision to deliver; 0 for "from the next change"
   */
  void watch(String key, boolean prefix, long startRevision, Sink sink) {
    watch(key, prefix, Set.of(), false, startRevision, sink);
  }

  /**
   * Starts a watch on the keys attached to some sessions only. If {@code startRevision} is older
   * than the retained history, the sink is told the oldest revision it may ask for, and completed.
   *
   * @param sessions only events of keys attached to one of these; empty for all keys
   * @param lossesOnly only deletes that the key's holder did not make (no puts, no releases)
   * @param startRevision the first revision to deliver; 0 for "from the next change"
   */
  void watch(String key, boolean prefix, Set<Long> sessions, boolean lossesOnly, long startRevision, Sink sink) {
    Watcher watcher = new Watcher(key, prefix, Set.copyOf(sessions), lossesOnly, startRevision, sink);
    fanOut.execute(() -> start(watcher, startRevision));
  }

  private void start(Watcher w, long startRevision) {
    seeResets();
    if (startRevision == 0) {
      goLive(w);
      return;
    }
    synchronized (this) {
      if (startRevision <= retainedAfter) {
        compacted(w, retainedAfter + 1);
        return;
      }
      w.cursor = firstAtOrAfter(startRevision);
    }
    catchingUp.add(w);
    catchUp(w);
  }

  private static void compacted(Watcher w, long compactRevision) {
    w.sink.send(WatchResponse.newBuilder().setCompactRevision(compactRevision).build());
    w.sink.complete();
  }

  /**
   * Fan-out: replays to a watcher that started in the past one bounded response of its history,
   * then gives way to the other tasks; once it reached the event the fan-out has reached, it is
   * live. Waits while its stream is not ready, so a replay never piles up in its backlog.
   */
  private void catchUp(Watcher w) {
    seeResets();
    if (!catchingUp.contains(w)) {
      return; // told to re-read meanwhile
    }
    if (w.sink.isClosed()) {
      catchingUp.remove(w);
      return;
    }
    if (!w.sink.ready()) {
      w.sink.whenReady(() -> fanOut.execute(() -> catchUp(w)));
      return;
    }
    int n;
    synchronized (this) {
      if (w.cursor < firstSeq) {
        catchingUp.remove(w);
        compacted(w, retainedAfter + 1);
        return;
      }
      n = w.cursor >= pumpNext ? 0 : copySlice(w.cursor, Math.min(pumpNext, firstSeq + size));
    }
    WatchResponse.Builder response = WatchResponse.newBuilder();
    long responseBytes = 0;
    int consumed = 0;
    int wholeRevisions = 0; // events up to the last revision boundary in the response
    int eventsAtBoundary = 0;
    for (; consumed < n; consumed++) {
      Event e = slice[consumed];
      if (consumed > 0 && e.getKv().getModRevision() != slice[consumed - 1].getKv().getModRevision()) {
        wholeRevisions = consumed;
        eventsAtBoundary = response.getEventsCount();
      }
      if (w.matches(e)) {
        int eventBytes = e.getSerializedSize();
        if (response.getEventsCount() > 0
            && (response.getEventsCount() >= MAX_RESPONSE_EVENTS || responseBytes + eventBytes > MAX_RESPONSE_BYTES)) {
          break;
        }
        response.addEvents(e);
        responseBytes += eventBytes;
      }
    }
    if (consumed < n && eventsAtBoundary > 0) {
      // Full: end it with a whole revision where one fits, so a resume after it misses nothing.
      while (response.getEventsCount() > eventsAtBoundary) {
        response.removeEvents(response.getEventsCount() - 1);
      }
      consumed = wholeRevisions;
    }
    java.util.Arrays.fill(slice, 0, n, null);
    w.cursor += consumed;
    if (response.getEventsCount() > 0) {
      w.sink.send(response.build());
    }
    if (w.cursor >= pumpNext) {
      goLive(w);
    } else {
      fanOut.execute(() -> catchUp(w));
    }
  }

  /** Runs tasks one at a time, in the order given, on an executor (a direct one: on the caller). */
  private static final class Serial implements Executor {
    private final Executor executor;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicInteger pending = new AtomicInteger();

    Serial(Executor executor) {
      this.executor = executor;
    }

    @Override
    public void execute(Runnable task) {
      tasks.add(task);
      if (pending.getAndIncrement() == 0) {
        executor.execute(this::drain);
      }
    }

    private void drain() {
      do {
        Runnable task = tasks.poll();
        try {
          task.run();
        } catch (RuntimeException e) {
          org.slf4j.LoggerFactory.getLogger(WatchHub.class).warn("a watch task failed", e);
        }
      } while (pending.decrementAndGet() != 0);
    }
  }
}
