package io.leasehold.pekko;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The shared register that lease-guarded actors (a singleton, a shard coordinator's allocations)
 * write their own actions to, in the order they happen, with the fencing token they act under;
 * and the checker that reads it.
 *
 * <p>The checker finds:
 *
 * <ul>
 *   <li>an instance that started while another, on any node, had started and not yet stopped
 *       (two running at once);</li>
 *   <li>a start without a lease (no token), or with a token not greater than an earlier start's;
 *       </li>
 *   <li>an action under a token older than the newest start: a holder that acted after another
 *       holder had started.</li>
 * </ul>
 */
final class TenureLog {

  enum Kind {
    START,
    ACT,
    STOP
  }

  record Event(int seq, Kind kind, String node, long token) {
    @Override
    public String toString() {
      return "#" + seq + " " + kind + " " + node + " token " + token;
    }
  }

  private final List<Event> events = new ArrayList<>();

  synchronized void record(Kind kind, String node, long token) {
    events.add(new Event(events.size(), kind, Objects.requireNonNull(node), token));
  }

  synchronized List<Event> events() {
    return List.copyOf(events);
  }

  /** {@return how many events of {@code kind} {@code node} recorded} */
  synchronized long count(Kind kind, String node) {
    return events.stream().filter(e -> e.kind() == kind && e.node().equals(node)).count();
  }

  /** {@return the tokens of the starts on {@code node}, in order} */
  synchronized List<Long> startTokens(String node) {
    return events.stream()
        .filter(e -> e.kind() == Kind.START && e.node().equals(node))
        .map(Event::token)
        .toList();
  }

  /** {@return every breach of the rules above, empty when the history is safe} */
  synchronized List<String> violations() {
    List<String> found = new ArrayList<>();
    Map<String, Event> running = new HashMap<>(); // node + token -> its START
    long newest = Long.MIN_VALUE;
    for (Event e : events) {
      String instance = e.node() + "/" + e.token();
      switch (e.kind()) {
        case START -> {
          if (e.token() < 0) {
            found.add(e + ": started without holding the lease");
          }
          for (Event other : running.values()) {
            found.add(e + ": started while " + other + " had not stopped (two running at once)");
          }
          if (newest != Long.MIN_VALUE && e.token() <= newest) {
            found.add(e + ": token not greater than the earlier start's " + newest);
          }
          newest = Math.max(newest, e.token());
          running.put(instance, e);
        }
        case ACT -> {
          if (e.token() < newest) {
            found.add(e + ": acted under token " + e.token() + " after token " + newest
                + " had started (stale holder)");
          }
        }
        case STOP -> running.remove(instance);
      }
    }
    return found;
  }

  @Override
  public synchronized String toString() {
    // Long runs of actions are summarised per node and token, so a failure message stays short.
    StringBuilder sb = new StringBuilder();
    Event last = null;
    int repeats = 0;
    for (Event e : events) {
      if (last != null && e.kind() == Kind.ACT && last.kind() == Kind.ACT
          && e.node().equals(last.node()) && e.token() == last.token()) {
        repeats++;
        continue;
      }
      if (repeats > 0) {
        sb.append("  ... ").append(repeats).append(" more ACT\n");
        repeats = 0;
      }
      sb.append("  ").append(e).append('\n');
      last = e;
    }
    if (repeats > 0) {
      sb.append("  ... ").append(repeats).append(" more ACT\n");
    }
    return sb.toString();
  }
}
