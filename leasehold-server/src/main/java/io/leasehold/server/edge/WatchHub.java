package io.leasehold.server.edge;

import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The watch streams of one node. Events arrive from the state machine as entries are applied, in
 * revision order; each watcher gets those that match its key or prefix. Recent events are kept
 * (up to a bound) so that a watcher can start, or resume after a reconnect, from a past revision
 * and miss nothing; a watcher asking for a revision older than that is told the oldest revision
 * it can ask for.
 */
public final class WatchHub {

  /** Where one watcher's events go; called from the applying thread, so it must not block. */
  interface Sink {
    void send(WatchResponse response);

    boolean isClosed();
  }

  private record Watcher(String key, boolean prefix, Set<Long> sessions, boolean lossesOnly, Sink sink) {
    boolean matches(Event e) {
      if (lossesOnly
          && (e.getType() == Event.Type.PUT
              || e.getCause().equals(io.leasehold.core.proto.DeleteCauses.RELEASED)
              || e.getCause().equals(io.leasehold.core.proto.DeleteCauses.SESSION_CLOSED))) {
        return false;
      }
      String k = e.getKv().getKey();
      if (!sessions.isEmpty() && !sessions.contains(e.getKv().getSessionId())) {
        return false;
      }
      return prefix ? k.startsWith(key) : k.equals(key);
    }
  }

  private final int capacity;
  private final ArrayDeque<Event> history = new ArrayDeque<>();
  private final List<Watcher> watchers = new CopyOnWriteArrayList<>();
  /** Every event with a revision above this one is in {@link #history}. */
  private long retainedAfter;
  /** The revision of the last events published (or of the snapshot loaded): what progress reports. */
  private long latestRevision;
  /** The revision the last progress report named; none is sent again until it moves. */
  private long progressSent;

  public WatchHub(int capacity) {
    this.capacity = capacity;
  }

  /**
   * The state was replaced (snapshot loaded) at {@code revision}: older history is unknown. Every
   * watcher may have missed events up to it, so each is told to re-read and watch again.
   */
  public synchronized void reset(long revision) {
    history.clear();
    retainedAfter = revision;
    latestRevision = revision;
    for (Watcher w : watchers) {
      if (!w.sink().isClosed()) {
        w.sink().send(WatchResponse.newBuilder().setCompactRevision(revision + 1).build());
      }
    }
    watchers.clear();
  }

  /** Events of one applied entry, all of one revision. */
  public synchronized void publish(List<Event> events) {
    if (events.isEmpty()) {
      return;
    }
    for (Event e : events) {
      history.addLast(e);
    }
    latestRevision = events.get(events.size() - 1).getKv().getModRevision();
    while (history.size() > capacity) {
      retainedAfter = history.removeFirst().getKv().getModRevision();
      // Events of one revision leave together, so "after retainedAfter" stays exact.
      while (!history.isEmpty() && history.peekFirst().getKv().getModRevision() == retainedAfter) {
        history.removeFirst();
      }
    }
    for (Watcher w : watchers) {
      if (w.sink().isClosed()) {
        watchers.remove(w);
        continue;
      }
      List<Event> matching = matching(w, events.iterator());
      if (!matching.isEmpty()) {
        w.sink().send(WatchResponse.newBuilder().addAllEvents(matching).build());
      }
    }
  }

  /**
   * Tells every watcher that it has been sent every matching event up to the latest revision
   * published, if that moved since the last report: a watcher whose keys do not change would
   * otherwise resume, after a reconnect, from the revision of the last event it saw — older than
   * the history of a node restarted since, which then makes it read everything again. Under the
   * hub's lock, so no event of a later revision can have been sent before the report.
   */
  public synchronized void reportProgress() {
    if (latestRevision == progressSent) {
      return;
    }
    progressSent = latestRevision;
    WatchResponse progress = WatchResponse.newBuilder().setProgressRevision(latestRevision).build();
    for (Watcher w : watchers) {
      if (w.sink().isClosed()) {
        watchers.remove(w);
      } else {
        w.sink().send(progress);
      }
    }
  }

  /**
   * The latest retained events of keys under {@code prefix}, for the status page: read from the
   * history kept for watchers anyway, so nothing is added to the applying thread's work.
   *
   * @param max how many at most
   * @return oldest first
   */
  public synchronized List<Event> recent(String prefix, int max) {
    ArrayDeque<Event> recent = new ArrayDeque<>();
    Iterator<Event> newestFirst = history.descendingIterator();
    while (newestFirst.hasNext() && recent.size() < max) {
      Event e = newestFirst.next();
      if (e.getKv().getKey().startsWith(prefix)) {
        recent.addFirst(e);
      }
    }
    return List.copyOf(recent);
  }

  /**
   * Starts a watch.
   *
   * @param startRevision the first revision to deliver; 0 for "from the next change"
   * @return false if {@code startRevision} is older than the retained history (the sink was told
   *     the oldest revision it may ask for)
   */
  synchronized boolean watch(String key, boolean prefix, long startRevision, Sink sink) {
    return watch(key, prefix, Set.of(), false, startRevision, sink);
  }

  /**
   * Starts a watch on the keys attached to some sessions only.
   *
   * @param sessions only events of keys attached to one of these; empty for all keys
   * @param lossesOnly only deletes that the key's holder did not make (no puts, no releases)
   * @param startRevision the first revision to deliver; 0 for "from the next change"
   * @return false if {@code startRevision} is older than the retained history
   */
  synchronized boolean watch(
      String key, boolean prefix, Set<Long> sessions, boolean lossesOnly, long startRevision, Sink sink) {
    Watcher watcher = new Watcher(key, prefix, Set.copyOf(sessions), lossesOnly, sink);
    if (startRevision != 0) {
      if (startRevision <= retainedAfter) {
        sink.send(WatchResponse.newBuilder().setCompactRevision(retainedAfter + 1).build());
        return false;
      }
      List<Event> past = new ArrayList<>();
      for (Event e : history) {
        if (e.getKv().getModRevision() >= startRevision && watcher.matches(e)) {
          past.add(e);
        }
      }
      if (!past.isEmpty()) {
        sink.send(WatchResponse.newBuilder().addAllEvents(past).build());
      }
    }
    watchers.add(watcher);
    return true;
  }

  private static List<Event> matching(Watcher w, Iterator<Event> events) {
    List<Event> matching = new ArrayList<>(1);
    while (events.hasNext()) {
      Event e = events.next();
      if (w.matches(e)) {
        matching.add(e);
      }
    }
    return matching;
  }
}
