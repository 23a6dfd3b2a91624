package io.leasehold.testkit;

import io.leasehold.LeaseEvent;
import io.leasehold.LeaseObserver;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/** Records what an observer is told, for the contract suite's observer clauses. */
final class EventRecorder implements LeaseObserver {

  private final List<LeaseEvent> events = new CopyOnWriteArrayList<>();
  private final Predicate<LeaseEvent> onEvent;

  EventRecorder() {
    this(e -> true);
  }

  /** @param onEvent also called with each event, on the observer's thread */
  EventRecorder(Predicate<LeaseEvent> onEvent) {
    this.onEvent = onEvent;
  }

  @Override
  public void onEvent(LeaseEvent event) {
    onEvent.test(event);
    events.add(event);
  }

  List<LeaseEvent> events() {
    return List.copyOf(events);
  }

  int count() {
    return events.size();
  }

  boolean sawType(LeaseEvent.Type type) {
    return events.stream().anyMatch(e -> e.type() == type);
  }
}
