package io.leasehold.server.edge;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One watcher's stream, with a bound on how far it may fall behind. gRPC buffers what a watcher
 * does not read without limit; so while the stream is not ready (its connection's flow-control
 * window is full and gRPC holds its threshold of bytes unsent) responses wait here instead, and
 * are handed on as it drains. When more than {@code --max-watch-backlog} events wait, or more
 * than {@link io.leasehold.server.Limits#WATCH_BACKLOG_BYTES} bytes of responses, the watch is
 * ended with {@code RESOURCE_EXHAUSTED}, saying how far it fell behind and the
 * revision to watch again from; what it was already handed still reaches it first, so a client
 * that resumes from the revision after the last event it saw misses nothing and gets nothing
 * twice. Never blocks the fan-out (nor the applying thread), never drops an event without ending
 * the watch. A replay from the history waits for it to be {@link #ready()}.
 */
public final class WatchStream implements WatchHub.Sink {

  private static final Logger log = LoggerFactory.getLogger(WatchStream.class);

  private final ServerCallStreamObserver<WatchResponse> stream;
  private final int maxBacklog;
  private final long maxBacklogBytes;
  /** Responses waiting for the stream to be ready; null while none wait. Guarded by this. */
  private ArrayDeque<WatchResponse> backlog;
  /** Events in {@link #backlog}. Guarded by this. */
  private int backlogEvents;
  /** Serialized bytes of {@link #backlog} (each response's size is computed once, and kept). */
  private long backlogBytes;
  private volatile boolean ended;
  /** Runs once the stream is ready with nothing waiting (a replay's next step); guarded by this. */
  private Runnable whenReady;
  /** Complete the stream once the backlog has gone; guarded by this. */
  private boolean completeWhenDrained;

  /**
   * Must be made in the service method's own call (gRPC takes the ready handler only then).
   *
   * @param maxBacklog events that may wait before the watch is ended
   * @param maxBacklogBytes bytes of responses that may wait before the watch is ended
   */
  WatchStream(ServerCallStreamObserver<WatchResponse> stream, int maxBacklog, long maxBacklogBytes) {
    this.stream = stream;
    this.maxBacklog = maxBacklog;
    this.maxBacklogBytes = maxBacklogBytes;
    stream.setOnReadyHandler(this::drain);
  }

  @Override
  public synchronized void send(WatchResponse response) {
    if (ended) {
      return;
    }
    if (backlog == null && stream.isReady()) {
      onNext(response);
      return;
    }
    if (response.getProgressRevision() != 0) {
      return; // behind anyway: a progress report would only lengthen the backlog
    }
    if (backlog == null) {
      backlog = new ArrayDeque<>();
    }
    backlog.addLast(response);
    backlogEvents += response.getEventsCount();
    // gRPC asks the same size again when it sends the response: computed once, then kept.
    backlogBytes += response.getSerializedSize();
    if (backlogEvents > maxBacklog || backlogBytes > maxBacklogBytes) {
      fellBehind();
    }
  }

  @Override
  public boolean isClosed() {
    return ended || stream.isCancelled();
  }

  @Override
  public synchronized boolean ready() {
    return !ended && backlog == null && stream.isReady();
  }

  @Override
  public synchronized void whenReady(Runnable then) {
    if (ready()) {
      then.run();
    } else {
      whenReady = then;
    }
  }

  @Override
  public synchronized void complete() {
    if (ended) {
      return;
    }
    if (backlog != null) {
      completeWhenDrained = true;
      return;
    }
    ended = true;
    try {
      stream.onCompleted();
    } catch (RuntimeException e) {
      log.debug("watch stream closed while completing it", e);
    }
  }

  /** The stream can take more: hands on what waits, oldest first, while it can. */
  private synchronized void drain() {
    while (!ended && backlog != null && !backlog.isEmpty() && stream.isReady()) {
      WatchResponse next = backlog.pollFirst();
      backlogEvents -= next.getEventsCount();
      backlogBytes -= next.getSerializedSize();
      onNext(next);
    }
    if (backlog != null && backlog.isEmpty()) {
      backlog = null; // nothing waits: the next response goes straight to the stream
      if (completeWhenDrained) {
        complete();
      }
    }
    if (whenReady != null && ready()) {
      Runnable then = whenReady;
      whenReady = null;
      then.run();
    }
  }

  private void fellBehind() {
    long from = 0;
    for (WatchResponse r : backlog) {
      if (r.getEventsCount() > 0) {
        from = r.getEvents(0).getKv().getModRevision();
        break;
      }
    }
    int behind = backlogEvents;
    long behindBytes = backlogBytes;
    ended = true;
    backlog = null;
    backlogEvents = 0;
    backlogBytes = 0;
    try {
      stream.onError(
          Status.RESOURCE_EXHAUSTED
              .withDescription(
                  (behind > maxBacklog
                          ? "the watcher fell behind by " + behind + " events, over --max-watch-backlog " + maxBacklog
                          : "the watcher fell behind by " + behindBytes + " bytes of events, over the "
                              + maxBacklogBytes + " a watcher may (" + behind + " events)")
                      + " (it did not read them fast enough); watch again from revision " + from)
              .asRuntimeException());
    } catch (RuntimeException e) {
      log.debug("watch stream closed while ending it", e);
    }
  }

  private void onNext(WatchResponse response) {
    try {
      stream.onNext(response);
    } catch (RuntimeException e) {
      // The watcher went away between the check and the send.
      log.debug("watch stream closed while sending", e);
    }
  }
}
