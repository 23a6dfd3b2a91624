package io.leasehold.client;

import io.leasehold.spi.OpenObservations;
import io.grpc.stub.StreamObserver;
import io.leasehold.LeaseEvent;
import io.leasehold.LeaseHolding;
import io.leasehold.Scheduler;
import io.leasehold.core.proto.DeleteCauses;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.GetRequest;
import io.leasehold.core.proto.GetResponse;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchRequest;
import io.leasehold.core.proto.WatchResponse;
import io.leasehold.spi.Observation;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One observation of a named lease on the core: reads the lease's key (a linearizable read),
 * reports it as the current state, then watches the key from the next revision. After a
 * reconnect the watch resumes from the revision after the last event it delivered, so nothing is
 * missed while the core retains that history; when it does not (compacted), the key is read again
 * and reported as a {@link LeaseEvent.Type#GAP}.
 */
final class LeaseObservation implements OpenObservations.StoreWatch {

  private static final Logger log = LoggerFactory.getLogger(LeaseObservation.class);
  private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final CoreClient client;
  private final Scheduler timers;
  private final Observation observation;
  private final String key;
  private long nextRevision; // guarded by this
  /** The token of the tenure last reported, 0 while free. */
  private long currentToken; // guarded by this
  private Object stream; // guarded by this: the running watch, to ignore replaced ones
  private Runnable cancelStream; // guarded by this
  private boolean closed; // guarded by this
  /** A read of the key is in flight: it opens the watch when it answers. */
  private boolean reading; // guarded by this

  LeaseObservation(CoreClient client, Scheduler timers, Observation observation) {
    this.client = client;
    this.timers = timers;
    this.observation = observation;
    this.key = CoreClient.LEASE_PREFIX + observation.name();
  }

  /** Reads the current state, reports it, and starts watching from there. */
  @Override
  public void start() {
    read(LeaseEvent.Type.CURRENT);
  }

  private void read(LeaseEvent.Type type) {
    synchronized (this) {
      reading = true;
    }
    GetRequest get = GetRequest.newBuilder().setKey(key).build();
    client
        .<GetResponse>call((stub, out) -> stub.get(get, out))
        .whenComplete(
            (response, error) -> {
              synchronized (this) {
                reading = false;
                if (closed) {
                  return;
                }
                if (error != null) {
                  reading = true;
                  log.debug("observation of '{}': read failed ({}); trying again", observation.name(), error.toString());
                  timers.schedule(() -> read(type), RETRY_NANOS);
                  return;
                }
                Optional<LeaseHolding> holding =
                    response.getKvsCount() == 0 ? Optional.empty() : Optional.of(holding(response.getKvs(0)));
                currentToken = holding.map(LeaseHolding::token).orElse(0L);
                observation.emit(
                    new LeaseEvent(
                        type,
                        observation.name(),
                        holding,
                        type == LeaseEvent.Type.GAP
                            ? "the core no longer had the changes since revision " + nextRevision + "; read again"
                            : ""));
                nextRevision = response.getRevision() + 1;
                open();
              }
            });
  }

  private synchronized void open() {
    if (closed) {
      return;
    }
    stopStream();
    WatchRequest request = WatchRequest.newBuilder().setKey(key).setStartRevision(nextRevision).build();
    Object[] self = new Object[1];
    StreamObserver<WatchResponse> observer =
        new StreamObserver<>() {
          @Override
          public void onNext(WatchResponse response) {
            handle(self[0], response);
          }

          @Override
          public void onError(Throwable t) {
            ended(self[0], t);
          }

          @Override
          public void onCompleted() {
            ended(self[0], null);
          }
        };
    self[0] = observer;
    stream = observer;
    cancelStream = client.watch(request, observer);
  }

  private synchronized void handle(Object which, WatchResponse response) {
    if (which != stream || closed) {
      return;
    }
    if (response.getCompactRevision() != 0) {
      stopStream();
      read(LeaseEvent.Type.GAP);
      return;
    }
    if (response.getProgressRevision() != 0) {
      // Everything up to it was sent: a resume elsewhere starts after it, not at the last event.
      nextRevision = Math.max(nextRevision, response.getProgressRevision() + 1);
      return;
    }
    for (Event e : response.getEventsList()) {
      KeyValue kv = e.getKv();
      nextRevision = Math.max(nextRevision, kv.getModRevision() + 1);
      if (!kv.getKey().equals(key)) {
        continue;
      }
      if (e.getType() == Event.Type.PUT) {
        if (kv.getCreateRevision() != currentToken) { // a rewrite of the same tenure is no change
          currentToken = kv.getCreateRevision();
          observation.emit(new LeaseEvent(LeaseEvent.Type.ACQUIRED, observation.name(), Optional.of(holding(kv)), ""));
        }
        continue;
      }
      currentToken = 0;
      String cause = e.getCause();
      LeaseEvent.Type type =
          switch (cause) {
            // The holder's own doing: a release, a new tenure of its own, or closing its session.
            case DeleteCauses.RELEASED, DeleteCauses.REPLACED, DeleteCauses.SESSION_CLOSED ->
                LeaseEvent.Type.RELEASED;
            case DeleteCauses.SESSION_EXPIRED -> LeaseEvent.Type.EXPIRED;
            default -> LeaseEvent.Type.REVOKED; // an operator's delete, a revoked session
          };
      String detail = cause.isEmpty() || cause.equals(DeleteCauses.RELEASED) ? "" : "core: " + cause;
      observation.emit(new LeaseEvent(type, observation.name(), Optional.of(holding(kv)), detail));
    }
  }

  private void ended(Object which, Throwable t) {
    long from;
    synchronized (this) {
      if (which != stream || closed) {
        return;
      }
      stream = null;
      cancelStream = null;
      from = nextRevision;
    }
    long pause = WatchLimits.afterEnd(t, client, log, "observation of '" + observation.name() + "'", from, RETRY_NANOS);
    timers.schedule(
        () -> {
          synchronized (this) {
            if (stream == null && !reading) {
              open();
            }
          }
        },
        pause);
  }

  private void stopStream() {
    if (cancelStream != null) {
      cancelStream.run();
    }
    stream = null;
    cancelStream = null;
  }

  /** Ends the observation: the watch is cancelled and nothing more is reported. */
  @Override
  public synchronized void close() {
    closed = true;
    stopStream();
  }

  static LeaseHolding holding(KeyValue kv) {
    return new LeaseHolding(kv.getValue().toStringUtf8(), kv.getCreateRevision(), Optional.empty());
  }
}
