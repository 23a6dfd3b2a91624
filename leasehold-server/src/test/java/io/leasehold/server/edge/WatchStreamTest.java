package io.leasehold.server.edge;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.leasehold.core.proto.Event;
import io.leasehold.core.proto.KeyValue;
import io.leasehold.core.proto.WatchResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A watcher that does not read is ended when it falls behind by more events than
 * {@code --max-watch-backlog} allows, or by more bytes than a watcher may: a few events of large
 * values must not be held without bound because they are few.
 */
class WatchStreamTest {

  private static final int MiB = 1 << 20;

  @Test
  void aWatcherBehindByMoreBytesThanAllowedIsEndedWhateverItsEventCount() {
    Stalled stalled = new Stalled();
    WatchStream stream = new WatchStream(stalled, 10_000, 4L * MiB);
    for (int revision = 1; revision <= 4; revision++) {
      stream.send(response(revision, MiB - 64)); // just under 1 MiB each: 4 fit
    }
    assertThat(stalled.error).as("4 responses of under 1 MiB wait").isNull();

    stream.send(response(5, MiB));
    assertThat(stalled.error).as("the fifth passes 4 MiB").isNotNull();
    Status status = Status.fromThrowable(stalled.error);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription())
        .startsWith("the watcher fell behind by ")
        .contains("bytes of events, over the " + 4L * MiB + " a watcher may (5 events)")
        .endsWith("watch again from revision 1");
    assertThat(stalled.sent).as("nothing was handed on: the stream never was ready").isEmpty();
  }

  @Test
  void aWatcherBehindByMoreEventsThanTheBacklogIsEndedNamingTheFlag() {
    Stalled stalled = new Stalled();
    WatchStream stream = new WatchStream(stalled, 3, 4L * MiB);
    for (int revision = 1; revision <= 4; revision++) {
      stream.send(response(revision, 10));
    }
    assertThat(Status.fromThrowable(stalled.error).getDescription())
        .startsWith("the watcher fell behind by 4 events, over --max-watch-backlog 3");
  }

  @Test
  void whatWaitsIsHandedOnOnceTheStreamIsReadyAndCountsNoMore() {
    Stalled stalled = new Stalled();
    WatchStream stream = new WatchStream(stalled, 10_000, 4L * MiB);
    for (int revision = 1; revision <= 3; revision++) {
      stream.send(response(revision, MiB));
    }
    stalled.ready = true;
    stalled.onReady.run();
    assertThat(stalled.sent).hasSize(3);
    stalled.ready = false;
    // The drained bytes no longer count: three more wait without ending the watch.
    for (int revision = 4; revision <= 6; revision++) {
      stream.send(response(revision, MiB));
    }
    assertThat(stalled.error).isNull();
  }

  private static WatchResponse response(long revision, int valueBytes) {
    return WatchResponse.newBuilder()
        .addEvents(Event.newBuilder().setType(Event.Type.PUT)
            .setKv(KeyValue.newBuilder().setKey("k").setModRevision(revision).setValue(ByteString.copyFrom(new byte[valueBytes]))))
        .build();
  }

  /** A watcher's stream whose flow-control window is full until the test says otherwise. */
  private static final class Stalled extends ServerCallStreamObserver<WatchResponse> {
    volatile boolean ready;
    Runnable onReady = () -> {};
    final List<WatchResponse> sent = new ArrayList<>();
    Throwable error;

    @Override
    public boolean isReady() {
      return ready;
    }

    @Override
    public void setOnReadyHandler(Runnable handler) {
      onReady = handler;
    }

    @Override
    public void onNext(WatchResponse value) {
      sent.add(value);
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onCompleted() {}

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public void setOnCancelHandler(Runnable handler) {}

    @Override
    public void setCompression(String compression) {}

    @Override
    public void disableAutoInboundFlowControl() {}

    @Override
    public void request(int count) {}

    @Override
    public void setMessageCompression(boolean enable) {}
  }
}
